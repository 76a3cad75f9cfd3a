// Package output asks a model for a final answer of a Go type, not prose:
// classify this ticket, extract these fields, plan these steps.
//
//	ticket, err := output.Run[Ticket](ctx, step, thread, prov)
//
// The answer's JSON Schema is reflected from T as typed tools' arguments
// are (tool.SchemaFor), and the answer is validated against it and decoded
// into T. New[T] gives an Answer to run many times; Run is the one-off.
//
// # How the schema reaches the model
//
// ModeResponseFormat sends it as the request's response format
// (provider.Request.ResponseFormat; the adapter decides strict mode as it
// does for tool schemas). ModeTool offers a final-answer tool (named
// DefaultToolName unless WithToolName) whose arguments are the answer, and
// requires a tool call on every turn, which works wherever tools do. The
// default, ModeAuto, takes the response format when the provider says it
// supports JSON schemas (provider.ResponseFormatSupporter) and, if it is
// a FormatChecker, takes this answer's schema; the tool otherwise. With
// x/provider/anthropic that is Claude's structured outputs on the models
// that have them (Claude 4.5 and later), and the tool for an answer type
// they cannot enforce (a map, a recursive type).
//
// The model may call the step's tools before it answers: a run ends on the
// first turn without tool calls, as loop.Step.Run does, so an answer given
// beside other tool calls is not taken; the model answers again once the
// tools have run.
//
// # What is stored
//
// The schema, the response format and the final-answer tool belong to the
// request and are never stored. In ModeTool, the call to the final-answer
// tool is stored and streamed as text (its arguments), so the thread reads
// the same in both modes, holds no call without a result, and no handler
// runs it. A turn offering a tool under the final-answer tool's name fails
// with ErrToolName rather than hide it; a call to the final-answer tool on
// a turn that did not offer it reaches the handlers like any other call,
// and x/tool's Handler refuses it as an unknown tool.
//
// # Invalid answers
//
// An answer that is not JSON or breaks the schema is stored as the model
// wrote it, followed by a user turn quoting why it was refused, and the
// model tries again: these are real turns, so the model sees them and a
// reloaded thread builds the same request. After WithMaxAttempts answers
// (DefaultMaxAttempts) Run returns an *InvalidError holding the last
// answer, which matches ErrInvalid.
//
// # Partial values
//
// Partials wraps an observer so that it also receives a PartialEvent[T]
// each time the answer parsed so far grows: the streamed JSON, cut to what
// is whole and closed, decoded into T. Use it for a UI that shows an object
// filling in. The parser keeps its state between deltas, so each byte is
// read once; while the answer parsed so far is under 16 KiB every change
// gives a partial, and past that a partial comes once it has grown
// fourfold, so partials of a long answer cost about twice one decode (the
// last partial of a long answer may come before it is whole; the typed
// answer of the completed turn is the whole one). An answer nesting deeper than 10000 levels (encoding/json's
// bound) gives no more partials, and is refused as not JSON.
//
// # Duplicate keys
//
// An object that has a key twice is refused: Decode returns an
// *InvalidError saying which key, and the model is asked again, while the
// partials stop at the second key. encoding/json would take the last value
// and the partials had shown the first; refusing both keeps a partial from
// showing what the answer contradicts.
//
// # Bad answer types
//
// New returns an error matching ErrOption, never panics, for a type JSON
// cannot carry (a chan, func or complex field) or whose schema cannot be
// reflected. The correction after an invalid answer is bounded as a whole:
// the reason is cut at 1000 bytes and the answer quoted at 2000, each with
// a marker. In ModeTool, a turn whose only call was the final answer is
// stored with the finish reason "stop", as a turn of text is.
package output
