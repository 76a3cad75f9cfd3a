package tool

import (
	"context"

	toolpkg "github.com/lodeworks/lode/tool"
)

// Offered returns the tools the caller of a call running under ctx may use
// — those set with WithOffered, else those the current loop turn offered —
// and false when no restriction applies. Tools that start work of their own
// (a sub-agent) read it so that they never widen what their caller may use.
func Offered(ctx context.Context) ([]toolpkg.Tool, bool) { return offered(ctx) }
