package loop

import (
	"context"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lodeworks/lode/internal/runspan"
	"github.com/lodeworks/lode/ledger"
)

// WithRunIdentity returns ctx saying whose run of st it is, as a Step's
// Run, Turn and Resume do: the spans lode's packages start in it (an
// adapter's chat span, x/tool's execute_tool) then name st's thread and
// the caller a door wrote on it. It is for code that runs part of a run
// outside a Step, such as a worker running one tool call of it. The
// session is the one st's metadata names (a child agent's thread names its
// caller's), or else that of the run ctx is in, or else st itself; a
// caller st does not name is kept from ctx. It panics as st's methods do.
func WithRunIdentity(ctx context.Context, st ledger.State) context.Context {
	id := st.ID()
	if cur, ok := runspan.From(ctx); ok && cur.Conversation == id {
		return ctx
	}
	return runspan.With(ctx, runspan.Of(ctx, id, st))
}

// SpanAttributes are the attributes every lode span of the run ctx belongs
// to carries, for a span an application starts itself inside it (a
// tool's own work): gen_ai.conversation.id and session.id, and user.id,
// user.roles and lode.tenant where the thread names a caller. Outside a
// run it is nil.
func SpanAttributes(ctx context.Context) []attribute.KeyValue {
	return runspan.Attributes(ctx)
}
