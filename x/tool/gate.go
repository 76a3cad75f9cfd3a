package tool

import (
	"context"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
)

// Gate is asked, at execution, whether the caller whose thread is st may
// run a registered tool (source is its owner, as in toolpkg.Binding). It
// is the execution side of a rule book such as x/policy, so that a call is
// refused even when what was offered and what is allowed drift apart. It
// must be safe for concurrent use; st is nil when the caller is unknown.
type Gate func(ctx context.Context, st ledger.State, t toolpkg.Tool, source string, call artifact.ToolCall) Verdict

// Verdict is a Gate's answer. The zero Verdict lets the call run.
type Verdict struct {
	// Hide refuses the call in the very words of an unknown tool, so that
	// no caller can probe for names it may not use.
	Hide bool
	// Refuse, when Hide is false, refuses the call with this text for the
	// model: a limit the caller reached, which it may act on.
	Refuse string
	// Withheld, with Refuse, says that the turn's offer left the tool out
	// for the reason Refuse gives (a flow rule, which the caller may act
	// on): a call to it is refused with Refuse rather than in the words of
	// an unknown tool.
	Withheld bool
	// Attrs describe the decision (who, which rule) on the operator's
	// span, and nowhere else.
	Attrs []attribute.KeyValue
}

// WithGate asks g before every call to a registered tool runs, and for
// the span of a call the turn did not offer. A nil g allows everything.
func WithGate(g Gate) HandlerOption { return func(h *Handler) { h.gate = g } }

type callerKey struct{}

// WithCaller marks ctx with the thread of a caller outside a loop turn (an
// MCP request's identity), for the Gate to read. Such a caller has no
// turns: a refused call is told which tools are available "to this
// caller" rather than "in this turn".
func WithCaller(ctx context.Context, st ledger.State) context.Context {
	return context.WithValue(ctx, callerKey{}, st)
}

// Caller returns the thread of the caller a call runs for: the one set
// with WithCaller, else the current loop turn's.
func Caller(ctx context.Context) (ledger.State, bool) {
	if st, ok := ctx.Value(callerKey{}).(ledger.State); ok && st != nil {
		return st, true
	}
	if t, ok := loop.CurrentTurn(ctx); ok && t.State != nil {
		return t.State, true
	}
	return nil, false
}

// ask runs the gate, if any, for a registered tool.
func (h *Handler) ask(ctx context.Context, b *toolpkg.Binding, call artifact.ToolCall) Verdict {
	if h.gate == nil {
		return Verdict{}
	}
	st, _ := Caller(ctx)
	return h.gate(ctx, st, b.Tool, b.Source, call)
}

// visible narrows tools to those the gate would not hide, for the list an
// unknown-tool refusal shows when no turn restricted the offer.
func (h *Handler) visible(ctx context.Context, tools []toolpkg.Tool) []toolpkg.Tool {
	if h.gate == nil {
		return tools
	}
	out := make([]toolpkg.Tool, 0, len(tools))
	for _, t := range tools {
		b, ok := h.registry.Lookup(t.Name)
		if ok && !h.ask(ctx, b, artifact.ToolCall{Name: t.Name}).Hide {
			out = append(out, t)
		}
	}
	return out
}
