package tool

import (
	"context"
	"slices"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	toolpkg "github.com/lodeworks/lode/tool"
)

// ToolFilter selects the tools a turn may see and use. It receives the
// registry's full, sorted tool list (shared: return a new slice rather than
// modifying it) and returns the subset for this turn. A filter that panics
// fails that turn (a *loop.OptionError from Step.Turn and Step.Run), not
// the program.
type ToolFilter func(ctx context.Context, st ledger.State, tools []toolpkg.Tool) []toolpkg.Tool

// WithFilteredTools returns an InvokeOption that offers the registry's
// tools, passed through filter, on every invocation. A nil filter offers
// every tool. Because the Handler refuses calls to tools a turn did not
// offer, the filter decides what may run as well as what is shown.
func WithFilteredTools(registry toolpkg.Registry, filter ToolFilter) provider.InvokeOption {
	return provider.OptionFunc(func(ctx context.Context, st ledger.State, req *provider.Request) error {
		tools := registry.Tools()
		if filter != nil {
			tools = filter(ctx, st, tools)
		}
		req.Tools = slices.Clip(tools)
		return nil
	})
}
