package tool_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// emitted runs call through Handle and returns what it emitted.
func emitted(t *testing.T, h *xtool.Handler, ctx context.Context, c artifact.ToolCall) artifact.Artifact {
	t.Helper()
	var got []artifact.Artifact
	err := h.Handle(ctx, c, loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if tc, ok := ev.(loop.TurnCompleteEvent); ok && tc.Role == ledger.RoleTool {
			got = append(got, tc.Artifacts...)
		}
	}))
	if err != nil || len(got) != 1 {
		t.Fatalf("handle: %v, emitted %v", err, got)
	}
	return got[0]
}

func TestApprovalRules(t *testing.T) {
	reg := fixture(t, nil)
	if err := reg.Register(tool.Tool{Name: "rm", Hints: tool.Hints{Destructive: true}}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "removed", nil }); err != nil {
		t.Fatal(err)
	}
	if err := reg.Mount(context.Background(), remoteSource{}); err != nil {
		t.Fatal(err)
	}
	rule := func(_ context.Context, tl tool.Tool, c artifact.ToolCall) (string, bool) {
		return "sums over 100 need a person", tl.Name == "sum" && c.Arguments == `{"a":100,"b":1}`
	}
	panicky := func(_ context.Context, tl tool.Tool, _ artifact.ToolCall) (string, bool) {
		if tl.Name == "fails" {
			panic("rule bug")
		}
		return "", false
	}
	h := xtool.NewHandler(reg, xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalFor("greet", "remote"),
		xtool.WithApprovalRule(rule), xtool.WithApprovalRule(nil), xtool.WithApprovalRule(panicky))
	pending := func(name, args, reason string) artifact.Artifact {
		return artifact.Pending{ToolCallID: "call_" + name, Name: name, Arguments: args, Reason: reason}
	}
	cases := []struct {
		call artifact.ToolCall
		want artifact.Artifact
	}{
		{call("rm", "{}"), pending("rm", "{}", "the tool is marked destructive")},
		{call("greet", "{}"), pending("greet", "{}", "the configuration requires approval for greet")},
		{call("remote__down", "{}"), pending("remote__down", "{}", "the configuration requires approval for the tools of remote")},
		{call("sum", `{"a":100,"b":1}`), pending("sum", `{"a":100,"b":1}`, "sums over 100 need a person")},
		{call("fails", "{}"), pending("fails", "{}", "the approval rule failed (rule bug)")},
		{call("sum", `{"a":1,"b":1}`), artifact.ToolResult{ToolCallID: "call_sum", Name: "sum", Content: "2"}},
		// Arguments that cannot run are refused before anyone is asked.
		{call("rm", "[]"), nil},
	}
	for _, c := range cases {
		t.Run(c.call.Name+c.call.Arguments, func(t *testing.T) {
			got := emitted(t, h, context.Background(), c.call)
			if c.want == nil {
				if r, ok := got.(artifact.ToolResult); !ok || !r.IsError {
					t.Fatalf("got %#v, want an error result", got)
				}
				return
			}
			if r, ok := got.(artifact.ToolResult); ok {
				r.Value = nil
				got = r
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %#v\nwant %#v", got, c.want)
			}
		})
	}
	// Without an approver a destructive hint asks nothing (MCP marks most
	// tools destructive), but what the configuration names, or a rule
	// selects, fails closed: it is refused, never run.
	for _, tc := range []struct {
		opts []xtool.HandlerOption
		call artifact.ToolCall
		want artifact.ToolResult
	}{
		{[]xtool.HandlerOption{xtool.WithApprovalFor("greet")}, call("rm", "{}"), artifact.ToolResult{ToolCallID: "call_rm", Name: "rm", Content: "removed"}},
		{nil, call("rm", "{}"), artifact.ToolResult{ToolCallID: "call_rm", Name: "rm", Content: "removed"}},
		{[]xtool.HandlerOption{xtool.WithApprovalFor("greet")}, call("greet", "{}"),
			artifact.ToolResult{ToolCallID: "call_greet", Name: "greet", IsError: true, Content: "the call to greet was not approved: " + xtool.ErrNoApprover.Error()}},
		{[]xtool.HandlerOption{xtool.WithApprovalFor("remote")}, call("remote__down", "{}"),
			artifact.ToolResult{ToolCallID: "call_remote__down", Name: "remote__down", IsError: true, Content: "the call to remote__down was not approved: " + xtool.ErrNoApprover.Error()}},
		{[]xtool.HandlerOption{xtool.WithApprovalRule(rule)}, call("sum", `{"a":100,"b":1}`),
			artifact.ToolResult{ToolCallID: "call_sum", Name: "sum", IsError: true, Content: "the call to sum was not approved: " + xtool.ErrNoApprover.Error()}},
		{[]xtool.HandlerOption{xtool.WithApprovalRule(rule)}, call("sum", `{"a":1,"b":1}`), artifact.ToolResult{ToolCallID: "call_sum", Name: "sum", Content: "2"}},
	} {
		t.Run("no approver/"+tc.call.Name+tc.call.Arguments, func(t *testing.T) {
			got, ok := emitted(t, xtool.NewHandler(reg, tc.opts...), context.Background(), tc.call).(artifact.ToolResult)
			got.Value = nil
			if !ok || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// Execute's callers (an MCP server) cannot wait, so a pending call is an
// error result there; under Resume's decision the call runs unasked.
func TestPendingExecuteAndApprovedRun(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := tool.NewRegistry()
	ran := 0
	if err := tool.RegisterFunc(reg, "rm", "Remove", func(_ context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		ran++
		return "removed " + in.Path, nil
	}, tool.WithHints(tool.Hints{Destructive: true})); err != nil {
		t.Fatal(err)
	}
	asked := 0
	h := xtool.NewHandler(reg, xtool.WithTracer(tp.Tracer("test")), xtool.WithApprover(func(context.Context, tool.Tool, artifact.ToolCall) error {
		asked++
		return xtool.ErrAwaitingApproval
	}))
	c := artifact.ToolCall{ID: "c1", Name: "rm", Arguments: `{"path":"x"}`}
	res := h.Execute(context.Background(), c)
	want := `the call to rm waits for a person's approval (the tool is marked destructive) and did not run`
	if !res.IsError || res.Content != want || ran != 0 {
		t.Fatalf("execute: %+v, ran %d", res, ran)
	}
	decision := loop.Approve("c1")
	decision.By = "ana"
	ctx := loop.WithApproval(context.Background(), decision)
	if r, ok := emitted(t, h, ctx, c).(artifact.ToolResult); !ok || r.Content != "removed x" || ran != 1 || asked != 1 {
		t.Fatalf("approved run: %#v, ran %d, asked %d", r, ran, asked)
	}
	// A decision for another call approves nothing.
	other := artifact.ToolCall{ID: "c2", Name: "rm", Arguments: `{"path":"y"}`}
	if _, ok := emitted(t, h, ctx, other).(artifact.Pending); !ok || ran != 1 {
		t.Fatalf("a decision on c1 let c2 run")
	}
	spans := rec.Ended()
	attrs := func(i int) map[string]string {
		m := map[string]string{}
		for _, kv := range spans[i].Attributes() {
			m[string(kv.Key)] = kv.Value.Emit()
		}
		return m
	}
	if a := attrs(0); a["lode.approval"] != "pending" || a["lode.approval.reason"] != "the tool is marked destructive" || a["error.type"] != "" {
		t.Fatalf("pending span: %v", a)
	}
	if a := attrs(1); a["lode.approval"] != "approved" || a["lode.approval.by"] != "ana" {
		t.Fatalf("approved span: %v", a)
	}
}

func TestCheckCallAndIdempotent(t *testing.T) {
	reg := fixture(t, nil)
	if err := reg.Register(tool.Tool{Name: "touch", Hints: tool.Hints{Idempotent: true}}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	h := xtool.NewHandler(reg)
	var ae *tool.ArgumentsError
	if err := h.CheckCall(context.Background(), call("sum", `{"a":"x"}`)); !errors.As(err, &ae) {
		t.Fatalf("bad arguments: %v", err)
	}
	if err := h.CheckCall(context.Background(), call("nope", `{}`)); err == nil || err.Error() != `xtool: unknown tool "nope"` {
		t.Fatalf("unknown tool: %v", err)
	}
	if err := h.CheckCall(context.Background(), call("sum", `{"a":1,"b":2}`)); err != nil {
		t.Fatal(err)
	}
	if !h.Idempotent(call("touch", "{}")) || h.Idempotent(call("sum", "{}")) || h.Idempotent(call("nope", "{}")) {
		t.Fatal("idempotent hints misread")
	}
}

// The deprecated names do what the new ones do, and the two sentinels
// stay apart: a call that waits is not a paused run.
func TestDeprecatedNamesAndTwoPendings(t *testing.T) {
	call := artifact.ToolCall{ID: "c1", Name: "rm"}
	for name, approve := range map[string]xtool.Approver{"PauseForDecision": xtool.PauseForDecision, "AskLater": xtool.AskLater} {
		if err := approve(context.Background(), tool.Tool{Name: "rm"}, call); err != xtool.ErrAwaitingApproval {
			t.Errorf("%s returned %v, want xtool.ErrAwaitingApproval", name, err)
		}
	}
	if xtool.DefaultFullLimit != xtool.DefaultMaxFullBytes || xtool.DefaultMaxFullBytes != 1<<20 {
		t.Errorf("DefaultFullLimit %d, DefaultMaxFullBytes %d", xtool.DefaultFullLimit, xtool.DefaultMaxFullBytes)
	}
	if errors.Is(xtool.ErrAwaitingApproval, loop.ErrPaused) || errors.Is(loop.ErrPaused, xtool.ErrAwaitingApproval) || errors.Is(&xtool.PendingError{}, loop.ErrPaused) {
		t.Error("xtool.ErrAwaitingApproval matches loop.ErrPaused")
	}
	if !errors.Is(&xtool.PendingError{}, xtool.ErrPending) || !errors.Is(&loop.PendingError{}, loop.ErrPending) {
		t.Error("the deprecated ErrPending aliases no longer match")
	}
}
