// Package provider is the contract between lode's loop and a model.
//
// A Provider streams one model invocation as an iter.Seq2 of artifacts:
// deltas (artifact.TextDelta, ...) as they arrive, then the whole artifacts
// of the assistant turn (Text, Reasoning, ToolCall, Usage, Finish). Stopping
// the iteration or cancelling the context ends the invocation.
//
// InvokeOptions shape a Request. They are resolved on every invocation with
// the turn's context and ledger.State, so a tool set, a system prompt or a
// temperature can depend on who is asking and what was said. Options never
// write to the ledger: a transform applied to Request.Turns lasts for one
// invocation only.
//
// Request.ResponseFormat asks for an answer in JSON (a schema, or any
// object). A provider that can send it implements ResponseFormatSupporter,
// so that a caller such as x/output can fall back to a tool elsewhere.
package provider
