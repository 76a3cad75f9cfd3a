package tool

import (
	"context"
	"strconv"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
)

// MetaCallsBelowPrefix, followed by a tool call's ID, is the caller's
// thread metadata key under which a gating Handler (one with an approver
// or a Gate) keeps how many calls were made below that call (by an agent's
// child, at any depth), so that a rule book counting a run's calls, such
// as x/policy's limits, charges them to the caller across turns and
// resumes.
const MetaCallsBelowPrefix = "lode.calls_below."

// metaCallsBelowKept marks a thread on which some count is kept, so that
// reading the counts of a thread without any costs one lookup.
const metaCallsBelowKept = "lode.calls_below"

// RecordedBelow returns how many calls were made below the call id of
// st's thread, as kept under MetaCallsBelowPrefix+id; 0 when none was
// kept, which for a thread without any costs one metadata lookup.
func RecordedBelow(st ledger.State, id string) int {
	if st == nil || id == "" {
		return 0
	}
	if _, ok := st.Metadata(metaCallsBelowKept); !ok {
		return 0
	}
	v, ok := st.Metadata(MetaCallsBelowPrefix + id)
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(v)
	return max(n, 0)
}

type belowKey struct{}

// CallsBelow reports, to a Gate asked about a call made below one of its
// handler's calls, how many calls have been made below that call so far,
// this one included; ok is false for the handler's own calls. The Gate's
// ctx is then that of its handler's call (its turn, its caller), and a
// Verdict's Refuse refuses the call below; Hide is not applied there,
// since what a child may use is its own agent's business (x/agent carries
// its caller's denials down by name).
func CallsBelow(ctx context.Context) (n int, ok bool) {
	n, ok = ctx.Value(belowKey{}).(int)
	return n, ok
}

// belowCount is what a call knows of the calls made below it: how many
// the caller's thread had recorded when the first one came, and how many
// came since.
type belowCount struct {
	prior, n int
}

// countBelow counts one call made below c and returns the total.
func (c *callCtx) countBelow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.below == nil {
		c.below = &belowCount{}
		c.below.prior = RecordedBelow(callerCall(c.parent))
	}
	c.below.n++
	return c.below.prior + c.below.n
}

// record keeps the count on the caller's thread when the call ends; best
// effort, as the count only feeds limits.
func (b *belowCount) record(ctx context.Context) {
	if st, id := callerCall(ctx); st != nil && id != "" {
		_ = RecordBelow(st, id, b.prior+b.n)
	}
}

// RecordBelow keeps on st that n calls were made below its call id, for
// RecordedBelow to read: what a gating Handler keeps when a call ends, for
// an engine that runs an agent's child apart (x/temporal) to keep too.
func RecordBelow(st ledger.State, id string, n int) error {
	if _, ok := st.Metadata(metaCallsBelowKept); !ok {
		if err := st.SetMetadata(metaCallsBelowKept, "1"); err != nil {
			return err
		}
	}
	return st.SetMetadata(MetaCallsBelowPrefix+id, strconv.Itoa(n))
}

// callerCall is the caller's thread and the ID of the call being run in
// ctx, from the loop turn.
func callerCall(ctx context.Context) (st ledger.State, id string) {
	t, ok := loop.CurrentTurn(ctx)
	if !ok || t.State == nil {
		return nil, ""
	}
	if i, ok := loop.ArtifactIndex(ctx); ok && i >= 0 && i < len(t.Answer) {
		if c, ok := t.Answer[i].(artifact.ToolCall); ok {
			id = c.ID
		}
	}
	return t.State, id
}

// limitAbove counts call against every gating call above it, then asks
// their Gates, nearest first; it returns the first refusal.
func limitAbove(above *callCtx, b *toolpkg.Binding, call artifact.ToolCall) string {
	type asked struct {
		g *callCtx
		n int
	}
	var chain [4]asked
	list := chain[:0]
	for g := above; g != nil; g, _ = g.parent.Value(gateKey{}).(*callCtx) {
		list = append(list, asked{g, g.countBelow()})
	}
	for _, a := range list {
		if a.g.gate.gate == nil {
			continue
		}
		st, _ := Caller(a.g)
		v := a.g.gate.gate(context.WithValue(a.g, belowKey{}, a.n), st, b.Tool, b.Source, call)
		if v.Refuse != "" {
			return v.Refuse
		}
	}
	return ""
}

// LimitBelow asks this handler's Gate about call, made below one of its
// calls by an agent's child that an engine runs apart (x/temporal runs it
// as a workflow of its own, so the chain of contexts through which a
// child's handler counts calls against its caller's is cut): n is how many
// calls have been made below that call, this one included, which the
// engine reckons from the ledger, and ctx is the context of the caller's
// call (loop.WithTurn rebuilds its turn). The Gate reads n with
// CallsBelow, as for a child run inside the call. It returns the Gate's
// refusal, or "" when the call may run as far as this handler's limits
// are concerned; t and source are the child's tool and its owner.
func (h *Handler) LimitBelow(ctx context.Context, t toolpkg.Tool, source string, call artifact.ToolCall, n int) string {
	if h.gate == nil {
		return ""
	}
	st, _ := Caller(ctx)
	return h.gate(context.WithValue(ctx, belowKey{}, n), st, t, source, call).Refuse
}
