package tool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// nested is a two-level stand-in for an agent: the outer handler runs
// "nest", whose tool executes the call "write" through an inner handler,
// in the context the outer handler gave it.
type nested struct {
	outer, inner *xtool.Handler
	writes       atomic.Int32
	innerOut     artifact.Artifact // what the inner handler emitted
}

func newNested(t *testing.T, outerOpts, innerOpts []xtool.HandlerOption) *nested {
	t.Helper()
	n := &nested{}
	innerReg := tool.NewRegistry()
	if err := innerReg.Register(tool.Tool{Name: "write"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		n.writes.Add(1)
		return "written", nil
	}); err != nil {
		t.Fatal(err)
	}
	n.inner = xtool.NewHandler(innerReg, innerOpts...)
	outerReg := tool.NewRegistry()
	// The outer registry holds write too, unmarked, and nest.
	if err := outerReg.Register(tool.Tool{Name: "write"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		return "outer write", nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := outerReg.Register(tool.Tool{Name: "nest"}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
		// The inner call runs for a caller of its own, as a child does.
		ctx = xtool.WithCaller(ctx, ledger.NewThread(ledger.WithID("worker")))
		var got []artifact.Artifact
		_ = n.inner.Handle(ctx, artifact.ToolCall{ID: "w1", Name: "write", Arguments: "{}"}, loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
			if tc, ok := ev.(loop.TurnCompleteEvent); ok {
				got = append(got, tc.Artifacts...)
			}
		}))
		if len(got) != 1 {
			return nil, fmt.Errorf("inner emitted %v", got)
		}
		n.innerOut = got[0]
		if p, ok := got[0].(artifact.Pending); ok {
			return nil, &xtool.PendingError{Reason: "inner: " + p.Reason}
		}
		return got[0].(artifact.ToolResult).Content, nil
	}); err != nil {
		t.Fatal(err)
	}
	n.outer = xtool.NewHandler(outerReg, outerOpts...)
	return n
}

// A call made under a gated call asks the gate's rules and approver too,
// with the rule's context that of the gated call.
func TestInheritedApproval(t *testing.T) {
	refuse := func(context.Context, tool.Tool, artifact.ToolCall) error { return xtool.ErrDenied }
	approve := func(context.Context, tool.Tool, artifact.ToolCall) error { return nil }
	// callerRule asks for calls made for the thread "boss".
	callerRule := xtool.WithApprovalRule(func(ctx context.Context, _ tool.Tool, c artifact.ToolCall) (string, bool) {
		st, _ := xtool.Caller(ctx)
		return "the boss's calls need approval", c.Name == "write" && st != nil && st.ID() == "boss"
	})
	pending := func(reason string) artifact.Artifact {
		return artifact.Pending{ToolCallID: "w1", Name: "write", Arguments: "{}", Reason: reason}
	}
	for _, tc := range []struct {
		name       string
		outer      []xtool.HandlerOption
		inner      []xtool.HandlerOption
		inInner    artifact.Artifact
		outerRes   artifact.Artifact
		wantWrites int32
	}{
		{name: "no gate above",
			inInner: artifact.ToolResult{ToolCallID: "w1", Name: "write", Content: "written"}, wantWrites: 1},
		{name: "approval asked above with no approver fails closed",
			outer:   []xtool.HandlerOption{xtool.WithApprovalFor("write")},
			inInner: artifact.ToolResult{ToolCallID: "w1", Name: "write", IsError: true, Content: "the call to write was not approved: " + xtool.ErrNoApprover.Error()}},
		{name: "refused above",
			outer:   []xtool.HandlerOption{xtool.WithApprover(refuse), xtool.WithApprovalFor("write")},
			inInner: artifact.ToolResult{ToolCallID: "w1", Name: "write", IsError: true, Content: "the call to write was not approved: xtool: call denied"}},
		{name: "approved above",
			outer:   []xtool.HandlerOption{xtool.WithApprover(approve), xtool.WithApprovalFor("write")},
			inInner: artifact.ToolResult{ToolCallID: "w1", Name: "write", Content: "written"}, wantWrites: 1},
		{name: "deferred above",
			outer:    []xtool.HandlerOption{xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalFor("write")},
			inInner:  pending("for the caller: the configuration requires approval for write"),
			outerRes: artifact.Pending{ToolCallID: "n1", Name: "nest", Arguments: "{}", Reason: "inner: for the caller: the configuration requires approval for write"}},
		{name: "rule above reads the outer caller",
			outer:   []xtool.HandlerOption{xtool.WithApprover(refuse), callerRule},
			inInner: artifact.ToolResult{ToolCallID: "w1", Name: "write", IsError: true, Content: "the call to write was not approved: xtool: call denied"}},
		{name: "rule above not asking",
			outer:   []xtool.HandlerOption{xtool.WithApprover(refuse)},
			inInner: artifact.ToolResult{ToolCallID: "w1", Name: "write", Content: "written"}, wantWrites: 1},
		{name: "own approval then refusal above",
			outer:   []xtool.HandlerOption{xtool.WithApprover(refuse), xtool.WithApprovalFor("write")},
			inner:   []xtool.HandlerOption{xtool.WithApprover(approve), xtool.WithApprovalFor("write")},
			inInner: artifact.ToolResult{ToolCallID: "w1", Name: "write", IsError: true, Content: "the call to write was not approved: xtool: call denied"}},
		{name: "own deferral then refusal above",
			outer:   []xtool.HandlerOption{xtool.WithApprover(refuse), xtool.WithApprovalFor("write")},
			inner:   []xtool.HandlerOption{xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalFor("write")},
			inInner: artifact.ToolResult{ToolCallID: "w1", Name: "write", IsError: true, Content: "the call to write was not approved: xtool: call denied"}},
		{name: "own deferral keeps its reason",
			outer:    []xtool.HandlerOption{xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalFor("write")},
			inner:    []xtool.HandlerOption{xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalFor("write")},
			inInner:  pending("the configuration requires approval for write"),
			outerRes: artifact.Pending{ToolCallID: "n1", Name: "nest", Arguments: "{}", Reason: "inner: the configuration requires approval for write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNested(t, tc.outer, tc.inner)
			// The outer caller is "boss"; the inner call runs for "worker".
			ctx := xtool.WithCaller(context.Background(), ledger.NewThread(ledger.WithID("boss")))
			got := emitted(t, n.outer, ctx, artifact.ToolCall{ID: "n1", Name: "nest", Arguments: "{}"})
			if tc.outerRes != nil && !equalArtifact(got, tc.outerRes) {
				t.Errorf("outer emitted %#v, want %#v", got, tc.outerRes)
			}
			if !equalArtifact(n.innerOut, tc.inInner) {
				t.Errorf("inner emitted %#v, want %#v", n.innerOut, tc.inInner)
			}
			if n.writes.Load() != tc.wantWrites {
				t.Errorf("write ran %d times, want %d", n.writes.Load(), tc.wantWrites)
			}
		})
	}
}

// equalArtifact compares what a test states of an artifact: a tool
// result's ID, name, content and error flag; a Pending record whole.
func equalArtifact(got, want artifact.Artifact) bool {
	if g, ok := got.(artifact.ToolResult); ok {
		w, ok := want.(artifact.ToolResult)
		return ok && g.ToolCallID == w.ToolCallID && g.Name == w.Name && g.Content == w.Content && g.IsError == w.IsError
	}
	return got == want
}

// Under a decision for the inner call itself (a resume running it), no
// gate is asked again.
func TestInheritedApprovalYieldsToDecision(t *testing.T) {
	var asked atomic.Int32
	refuse := func(context.Context, tool.Tool, artifact.ToolCall) error { asked.Add(1); return xtool.ErrDenied }
	n := newNested(t, []xtool.HandlerOption{xtool.WithApprover(refuse), xtool.WithApprovalFor("write")}, nil)
	ctx := loop.WithApproval(context.Background(), loop.Approve("w1"))
	// The outer call n1 needs no approval, so the decision for w1 reaches
	// the inner handler only.
	if got := emitted(t, n.outer, ctx, artifact.ToolCall{ID: "n1", Name: "nest", Arguments: "{}"}); got.(artifact.ToolResult).Content != "written" {
		t.Fatalf("outer emitted %#v", got)
	}
	if asked.Load() != 0 || n.writes.Load() != 1 {
		t.Errorf("approver asked %d times, write ran %d times; want 0 and 1", asked.Load(), n.writes.Load())
	}
}

// A tool whose call waits for approval below it says so with an error
// matching ErrAwaitingApproval; the Handler records its call as pending, and
// Execute, which cannot wait, returns an error result saying so.
func TestToolReportsPending(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		reason string
	}{
		{"typed", &xtool.PendingError{Reason: "the child waits for write"}, "the child waits for write"},
		{"typed without reason", &xtool.PendingError{}, "a call made for it waits for approval"},
		{"wrapped sentinel", fmt.Errorf("deep: %w", xtool.ErrAwaitingApproval), "a call made for it waits for approval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := tool.NewRegistry()
			if err := reg.Register(tool.Tool{Name: "delegate"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
				return nil, tc.err
			}); err != nil {
				t.Fatal(err)
			}
			h := xtool.NewHandler(reg)
			c := artifact.ToolCall{ID: "d1", Name: "delegate", Arguments: "{}"}
			want := artifact.Pending{ToolCallID: "d1", Name: "delegate", Arguments: "{}", Reason: tc.reason}
			if got := emitted(t, h, context.Background(), c); got != want {
				t.Errorf("emitted %#v, want %#v", got, want)
			}
			res := h.Execute(context.Background(), c)
			if !res.IsError || res.Content != "the call to delegate waits for a person's approval ("+tc.reason+") and did not run" {
				t.Errorf("Execute: %+v", res)
			}
		})
	}
	if got := (&xtool.PendingError{Reason: "r"}).Error(); !strings.HasPrefix(got, "xtool: ") || !errors.Is(&xtool.PendingError{}, xtool.ErrAwaitingApproval) {
		t.Errorf("PendingError reads %q and must match ErrAwaitingApproval", got)
	}
}

// dispatchAllocs is what one call of the add tool through the Handler
// allocates (BenchmarkDispatchAdd); making a Handler's approval gate
// reachable from its calls' contexts adds nothing to it.
const dispatchAllocs = 9

func TestDispatchAllocsWithGate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own account")
	}
	allow := func(context.Context, ledger.State, tool.Tool, string, artifact.ToolCall) xtool.Verdict {
		return xtool.Verdict{}
	}
	for name, f := range map[string]func(){
		"plain":         addDispatch(t),
		"with approver": addDispatchWith(t, xtool.WithApprover(xtool.PauseForDecision)),
		"with gate":     addDispatchWith(t, xtool.WithGate(allow)),
	} {
		n := testing.AllocsPerRun(200, f)
		for range 2 {
			n = min(n, testing.AllocsPerRun(200, f))
		}
		if n != dispatchAllocs {
			t.Errorf("%s: a call allocates %v times, want %d", name, n, dispatchAllocs)
		}
	}
	// A call made inside another call costs what it costs there whether
	// or not the handler above gates. The first nested measure of a
	// process counts one-off set-up as well, whichever side goes first, so
	// a warm-up measure is left out.
	// Allocations of other goroutines (the watchdog, other tests') land in
	// a measure now and then, so each side keeps its least of a few.
	belowAllocs(t)
	ungated, gated := belowAllocs(t), belowAllocs(t, xtool.WithApprover(xtool.PauseForDecision))
	for range 4 {
		ungated = min(ungated, belowAllocs(t))
		gated = min(gated, belowAllocs(t, xtool.WithApprover(xtool.PauseForDecision)))
	}
	if gated != ungated {
		t.Errorf("a call below a gated call allocates %v times, %v below an ungated one", gated, ungated)
	}
}

// belowAllocs measures the allocations of a call of the add tool made
// inside the call of a handler with opts.
func belowAllocs(t *testing.T, opts ...xtool.HandlerOption) float64 {
	t.Helper()
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "add", "Add a and b", addFn); err != nil {
		t.Fatal(err)
	}
	inner := xtool.NewHandler(reg)
	c := artifact.ToolCall{ID: "c1", Name: "add", Arguments: addArgs}
	e := loop.EmitterFunc(func(context.Context, loop.Event) {})
	var n float64
	outerReg := tool.NewRegistry()
	if err := outerReg.Register(tool.Tool{Name: "nest"}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
		n = testing.AllocsPerRun(200, func() { _ = inner.Handle(ctx, c, e) })
		return "done", nil
	}); err != nil {
		t.Fatal(err)
	}
	outer := xtool.NewHandler(outerReg, append(opts, xtool.WithTimeout(time.Hour))...)
	if r := outer.Execute(context.Background(), artifact.ToolCall{ID: "n1", Name: "nest", Arguments: "{}"}); r.IsError {
		t.Fatal(r.Content)
	}
	return n
}

// BenchmarkDispatchBelowGate is one call of the add tool made inside
// another tool's call (as an agent's child makes it), below a handler that
// gates (an approver: the inherited approval and limit checks) and below
// one that does not, the difference being what inheriting costs.
func BenchmarkDispatchBelowGate(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []xtool.HandlerOption
	}{
		{"gated", []xtool.HandlerOption{xtool.WithApprover(xtool.PauseForDecision)}},
		{"ungated", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			reg := tool.NewRegistry()
			if err := tool.RegisterFunc(reg, "add", "Add a and b", addFn); err != nil {
				b.Fatal(err)
			}
			inner := xtool.NewHandler(reg)
			c := artifact.ToolCall{ID: "c1", Name: "add", Arguments: addArgs}
			e := loop.EmitterFunc(func(context.Context, loop.Event) {})
			outerReg := tool.NewRegistry()
			if err := outerReg.Register(tool.Tool{Name: "nest"}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := inner.Handle(ctx, c, e); err != nil {
						return nil, err
					}
				}
				b.StopTimer()
				return "done", nil
			}); err != nil {
				b.Fatal(err)
			}
			outer := xtool.NewHandler(outerReg, append(bc.opts, xtool.WithTimeout(time.Hour))...)
			if r := outer.Execute(context.Background(), artifact.ToolCall{ID: "n1", Name: "nest", Arguments: "{}"}); r.IsError {
				b.Fatal(r.Content)
			}
		})
	}
}

// addDispatchWith is addDispatch with handler options.
func addDispatchWith(tb testing.TB, opts ...xtool.HandlerOption) func() {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "add", "Add a and b", addFn); err != nil {
		tb.Fatal(err)
	}
	h := xtool.NewHandler(reg, opts...)
	c := artifact.ToolCall{ID: "c1", Name: "add", Arguments: addArgs}
	e := loop.EmitterFunc(func(context.Context, loop.Event) {})
	ctx := context.Background()
	return func() {
		if err := h.Handle(ctx, c, e); err != nil {
			tb.Fatal(err)
		}
	}
}

// The tool being called is destructive while the gating handler above
// holds a tool of that name that is not: the hint still asks.
func TestInheritedApprovalDestructiveBelow(t *testing.T) {
	var asked atomic.Int32
	refuse := func(context.Context, tool.Tool, artifact.ToolCall) error { asked.Add(1); return xtool.ErrDenied }
	innerReg := tool.NewRegistry()
	ran := 0
	if err := innerReg.Register(tool.Tool{Name: "write", Hints: tool.Hints{Destructive: true}}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		ran++
		return "written", nil
	}); err != nil {
		t.Fatal(err)
	}
	inner := xtool.NewHandler(innerReg)
	outerReg := tool.NewRegistry()
	for _, n := range []string{"write", "nest"} {
		if err := outerReg.Register(tool.Tool{Name: n}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
			return inner.Execute(ctx, artifact.ToolCall{ID: "w1", Name: "write", Arguments: "{}"}).Content, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	outer := xtool.NewHandler(outerReg, xtool.WithApprover(refuse))
	got := emitted(t, outer, context.Background(), artifact.ToolCall{ID: "n1", Name: "nest", Arguments: "{}"})
	if r := got.(artifact.ToolResult); r.Content != "the call to write was not approved: xtool: call denied" || ran != 0 || asked.Load() != 1 {
		t.Errorf("result %q, ran %d, asked %d: want refused, not run, asked once", r.Content, ran, asked.Load())
	}
}
