// Package artifact is lode's vocabulary: the things a model produces and a
// tool returns (Text, Reasoning, ToolCall, ToolResult, Usage, Image, Audio,
// Resource, ResourceLink, Finish, and Opaque for what only one adapter
// understands)
// and the stream deltas that announce them while they are being produced
// (TextDelta, ReasoningDelta, ToolCallDelta).
//
// Every artifact carries its kind, and Marshal/Unmarshal round-trip any
// artifact through JSON by that kind. A kind this version does not know is
// read back as Unknown, which keeps the original bytes, so a ledger written
// by a newer lode survives a round trip through an older one.
package artifact
