package tool

import (
	"context"
	"fmt"
	"iter"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
)

// AddLabel labels the thread of the caller a call runs for (see Caller)
// with l, from inside a ToolFunc, for a result that carries what the
// tool's hints cannot say in advance: x/agent's child says its answer is
// untrusted when the child read untrusted content. The label names the
// call's tool as the one that brought it. It fails when ctx carries no
// caller's thread.
func AddLabel(ctx context.Context, l ledger.Label) error {
	st, ok := Caller(ctx)
	if !ok {
		return fmt.Errorf("xtool: add label %q: the context carries no caller's thread; call AddLabel from inside a tool call", l)
	}
	return addLabel(ctx, st, l, callName(ctx))
}

// LabelWriter records label l, brought in by the tool from, on the
// thread st; see WithLabelWriter.
type LabelWriter func(st ledger.State, l ledger.Label, from string) error

type labelWriterKey struct{}

// WithLabelWriter marks ctx with how a Handler running calls under it,
// and AddLabel, record a label on a caller's thread, in place of
// ledger.AddLabel: for an engine whose calls write to one stored thread
// at the same time (x/temporal runs each call as an activity of its own),
// which reads the thread again and retries when another call changed it
// first. A nil w keeps ledger.AddLabel.
func WithLabelWriter(ctx context.Context, w LabelWriter) context.Context {
	return context.WithValue(ctx, labelWriterKey{}, w)
}

func addLabel(ctx context.Context, st ledger.State, l ledger.Label, from string) error {
	if w, ok := ctx.Value(labelWriterKey{}).(LabelWriter); ok && w != nil {
		return w(st, l, from)
	}
	return ledger.AddLabel(st, l, from)
}

// callName is the name of the tool call being handled in ctx, "" when the
// loop does not say (a call made outside a turn: an MCP request).
func callName(ctx context.Context) string {
	t, ok := loop.CurrentTurn(ctx)
	if !ok {
		return ""
	}
	if i, ok := loop.ArtifactIndex(ctx); ok && i >= 0 && i < len(t.Answer) {
		if c, ok := t.Answer[i].(artifact.ToolCall); ok {
			return c.Name
		}
	}
	return ""
}

// label records, on the caller's thread, the labels a call to t brought
// in once it ran (its hints' Untrusted and Private): whatever its result,
// since a failed fetch may still echo outside text. It is called before
// the result is emitted, so no later call of the thread is decided
// without them.
func label(ctx context.Context, t *toolpkg.Tool) error {
	if !t.Hints.Untrusted && !t.Hints.Private {
		return nil
	}
	for st := range callers(ctx) {
		if t.Hints.Untrusted {
			if err := addLabel(ctx, st, ledger.LabelUntrusted, t.Name); err != nil {
				return err
			}
		}
		if t.Hints.Private {
			if err := addLabel(ctx, st, ledger.LabelPrivate, t.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// aboveKey asks a tool call's context for the callCtx of the nearest call
// above it, whatever its handler.
type aboveKey struct{}

// callers yields the thread of the caller a call runs for, then those of
// the calls it runs below (an agent's child runs inside its parent's call),
// nearest first: what a child reads reaches its callers' threads at once,
// so their rules decide the child's later calls, and their own, on it.
func callers(ctx context.Context) iter.Seq[ledger.State] {
	return func(yield func(ledger.State) bool) {
		var last ledger.State
		for {
			if st, ok := Caller(ctx); ok && st != last {
				if !yield(st) {
					return
				}
				last = st
			}
			c, _ := ctx.Value(aboveKey{}).(*callCtx)
			if c == nil {
				return
			}
			ctx = c.parent
		}
	}
}
