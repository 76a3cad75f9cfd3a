package tool

import (
	"context"

	"github.com/lodeworks/lode/artifact"
)

// RemoteSource is a named set of tools that runs elsewhere: a pack, an MCP
// server. The registry lists its tools when it is mounted and routes calls
// back to it by the tool's own (unprefixed) name.
type RemoteSource interface {
	// Name identifies the source; it prefixes its tools unless mounted Flat.
	Name() string
	// Tools lists the source's tools.
	Tools(ctx context.Context) ([]Tool, error)
	// Call runs the tool called name. A failure the model should read may be
	// returned as a Result with IsError set; an error means the call could
	// not be made.
	Call(ctx context.Context, name string, args map[string]any) (any, error)
}

// Notifier is implemented by sources whose tools can change while mounted
// (MCP's notifications/tools/list_changed). The registry registers fn, and
// re-lists the source's tools each time it is called.
type Notifier interface {
	OnToolsChanged(fn func())
}

// Result lets a tool return more than a value: a failure the model should
// read (IsError), and content that is not text (Parts: images, audio,
// resources, as artifacts). Content, when set, is the text the model sees;
// otherwise Value is rendered.
type Result struct {
	Content string
	Value   any
	IsError bool
	Parts   []artifact.Artifact
}
