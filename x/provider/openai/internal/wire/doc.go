// Package wire is what the two adapters of OpenAI's APIs (chat
// completions in openai, Responses in openai/responses) do alike at the
// HTTP level through go-openai: how an attempt is sent and retried, how a
// whole answer's body is kept for the members go-openai's types leave out,
// and how an error body is read. Each adapter keeps its own error types and
// texts; this package hands them the fields.
package wire
