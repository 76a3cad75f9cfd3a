// Package openai is lode's provider for the OpenAI chat-completions API and
// every server that speaks it (vLLM, llama.cpp, Ollama, LiteLLM, ...), built
// on github.com/sashabaranov/go-openai.
//
// New checks its configuration up front: a model is always required, and an
// API key is required unless a base URL is set, since a local server usually
// needs none. WithAPIKey and WithBaseURL fall back to OPENAI_API_KEY and
// OPENAI_BASE_URL (read through WithEnv's lookup when one is given).
//
// Invoke turns the ledger into messages (system, user text and images,
// assistant text, reasoning and tool calls, one tool message per result),
// offers Request.Tools as functions (strict where CheckStrict allows) and
// streams the answer: text, reasoning and tool-call deltas as they arrive,
// then the whole artifacts in order — Reasoning, Text, ToolCalls by index,
// Usage, Finish. Tool-call fragments are joined by index, however they
// interleave; arguments are kept exactly as the model wrote them, valid
// JSON or not. Cancelling the context ends the stream at once.
//
// Failures are typed: *APIError for an HTTP refusal (errors.Is against
// ErrUnauthorized, ErrNotFound, ...; 429 and 5xx are retried with bounded
// backoff that honours Retry-After), *ResponseError for a response that
// breaks the protocol (ErrIncomplete, ErrMalformed, ErrInvalidToolCall) and
// *RequestError for a history or tool set that cannot be sent.
//
// Two limits keep a stalled server from hanging an agent: WithIdleTimeout
// (DefaultIdleTimeout, two minutes, unless set) bounds any silence from the
// server — before a stream's first byte and between any two reads of a
// body — and WithTimeout (off unless set) bounds the whole invocation. The
// one that fires ends the invocation with a *TimeoutError that names it and
// the option that changes it, matching ErrTimeout (and ErrIdleTimeout for
// the idle limit) through loop.Run's errors too.
//
// Choices this adapter makes, for servers to agree with:
//   - MaxTokens goes out as max_completion_tokens; WithLegacyMaxTokens sends
//     max_tokens for servers that know only that.
//   - A Temperature or TopP of 0 is sent as 0 (go-openai alone would drop it).
//   - Reasoning from earlier answers is sent back as reasoning_content
//     unless WithSendReasoning(false).
//   - Usage and Finish in assistant turns are not sent.
//   - A tool message carries only text, so a ToolResult goes out as its
//     Content, which is what the model is meant to see (x/tool/mcp notes
//     each image, audio clip or binary resource there in brackets). Parts
//     are not added to a Content that is set; a result with no Content
//     sends the text of its text parts and text resources and a bracketed
//     note for each part it cannot carry ("[image image/png, 812 bytes —
//     not shown: ...]"), and a result with neither is "(no output)".
//     Images are never moved into a user message instead: a tool's output
//     would then speak with the user's authority.
//   - In system and user turns a text Resource is sent as text under its
//     URI and a ResourceLink as a line naming it; a user's image Resource
//     is sent as an image. Audio, and any other binary resource, is a
//     *RequestError: go-openai's messages carry only text and images.
//   - A request is not sent on a context already cancelled, and an error
//     response is read only up to 64 KiB and always closed.
//   - A stream counts as whole only with a finish reason and a closing
//     "data: [DONE]"; anything less is ErrIncomplete, never a short answer.
//   - A tool call the server sent without an ID gets a random one.
package openai
