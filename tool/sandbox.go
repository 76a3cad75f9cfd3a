package tool

import (
	"context"
	"errors"
)

// Sandbox is where a tool call may act. The application assigns sandboxes
// through the handler; a model can never choose one. Tools that touch the
// world ask for a richer interface by type assertion (a file root, an exec
// environment) and refuse to run when the sandbox they were given lacks it,
// so "no sandbox" never means "the host".
type Sandbox interface {
	// Name identifies the sandbox in results, logs and spans.
	Name() string
}

// ErrNoSandbox is returned by tools that need a sandbox and were given none
// that provides what they need.
var ErrNoSandbox = errors.New("tool: no sandbox assigned")

type noSandbox struct{}

func (noSandbox) Name() string { return "none" }

// NoSandbox is the sandbox of a call the application assigned none: it
// provides nothing, so any tool that needs a sandbox refuses to run.
func NoSandbox() Sandbox { return noSandbox{} }

type sandboxKey struct{}

// WithSandbox marks ctx with the sandbox a call was assigned. The registry
// does this for calls to mounted sources, which take no sandbox argument.
func WithSandbox(ctx context.Context, sb Sandbox) context.Context {
	return context.WithValue(ctx, sandboxKey{}, sb)
}

// SandboxFrom returns the sandbox assigned to the call ctx belongs to, or
// NoSandbox when none was.
func SandboxFrom(ctx context.Context) Sandbox {
	if sb, ok := ctx.Value(sandboxKey{}).(Sandbox); ok && sb != nil {
		return sb
	}
	return NoSandbox()
}
