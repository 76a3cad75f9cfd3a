package tool

import (
	"context"
	"encoding/json"
	"time"
)

// Tool describes a tool to a model: its name, what it does and the JSON
// Schema of its arguments, plus hints and limits for the handler.
type Tool struct {
	// Name matches ^[a-zA-Z0-9_-]{1,64}$, which every major model API accepts.
	Name        string
	Description string
	// Schema is the JSON Schema of the arguments object. Empty means an
	// object with no declared properties.
	Schema json.RawMessage
	// Title is a display name for people, where Name is for models.
	Title string
	// OutputSchema is the JSON Schema of the object the tool returns as
	// structured content (MCP's outputSchema). Empty means none declared.
	OutputSchema json.RawMessage
	// Hints describe the tool's effects; the handler's approval hook reads
	// Destructive.
	Hints Hints
	// Annotations is what a remote source said of the tool in MCP's terms
	// (its "annotations" object, as JSON), kept so that a server serving
	// the tool again repeats it as said; Hints holds its meaning, with
	// MCP's defaults applied. Empty means a server derives them from Hints.
	Annotations json.RawMessage
	// Timeout overrides the handler's default per-call timeout when positive.
	Timeout time.Duration
	// Budget overrides the handler's default result budget when non-zero.
	Budget Budget
	// Deferred asks an adapter that speaks a provider's own tool search
	// to send the tool for loading on demand (defer_loading, Anthropic's
	// and the Responses API's);
	// an adapter without one sends it as any other tool. A turn's filter
	// sets it on the tools it offers (x/tool/toolsearch's Native), never
	// the registry.
	Deferred bool
	// Inline promises that the tool returns promptly, or as soon as its
	// context ends: it does not block on anything that ignores the
	// context. The handler then runs it on the caller's goroutine, which
	// saves the hand-off to a goroutine of its own (a wake-up of another
	// core, most of a small call's cost). A tool that breaks the promise
	// holds the turn until it returns; the handler reports such a call as
	// timed out and runs the tool's later calls on a goroutine again. It
	// also promises not to call runtime.Goexit, which would end the
	// caller's goroutine.
	Inline bool
}

// Hints describe what a tool does to the world, after MCP's tool
// annotations, and the flow labels its calls carry (x/policy's flow rules
// read them; see ledger.Label).
type Hints struct {
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
	// Untrusted says that the tool's output may carry text written by
	// outside parties (a web page, mail, an MCP server's answer): once a
	// call has run, the caller's thread is labelled ledger.LabelUntrusted.
	Untrusted bool
	// Private says that the tool's output holds the user's private data:
	// once a call has run, the caller's thread is labelled
	// ledger.LabelPrivate.
	Private bool
	// SendsOut says that a call sends data out of the process to someone
	// other than the user (mail, a post, an HTTP request with a body): the
	// calls a flow rule's "sends_out" names.
	SendsOut bool
}

// Budget bounds what the model sees of one result. Zero fields mean "the
// handler's default"; a negative field means "no limit".
type Budget struct {
	Bytes int
	Lines int
}

// ToolFunc runs a tool. args has been checked against the tool's schema.
// sb is the sandbox the application assigned to this call; a tool that needs
// one must refuse to run when sb does not provide what it needs.
type ToolFunc func(ctx context.Context, sb Sandbox, args map[string]any) (any, error)
