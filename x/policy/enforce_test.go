package policy_test

import (
	"context"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// Every refusal puts the roles and the deciding rule on the operator's
// span, whether the turn never offered the tool or the gate refused it.
func TestRefusalTraced(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := doorRegistry(t)
	enf := policy.NewEnforcer(reg, mustParse(t, testPolicy))
	h := xtool.NewHandler(reg, append(enf.HandlerOptions(), xtool.WithTracer(tp.Tracer("test")))...)
	for _, tc := range []struct {
		roles   []string
		tool    string
		inLoop  bool
		rule    string
		allowed bool
	}{
		{[]string{"viewer"}, "fs_write_file", true, policy.NoRule, false},
		{[]string{"editor"}, "fs_delete", true, `editor deny tools "fs_delete" (line 11)`, false},
		{[]string{"editor"}, "fs_delete", false, `editor deny tools "fs_delete" (line 11)`, false},
		{[]string{"ghost"}, "fs_list", false, policy.NoRule, false},
		{[]string{"viewer"}, "fs_list", true, `viewer allow tools "fs_list" (line 5)`, true},
	} {
		rec.Reset()
		if tc.inLoop {
			step := loop.New(loop.WithHandlers(h), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, enf.Filter())))
			st := thread(tc.roles)
			_ = st.Append(ledger.RoleUser, artifact.Text{Content: "go"})
			if _, err := step.Run(context.Background(), st, script.Play(script.Reply(artifact.ToolCall{ID: "1", Name: tc.tool, Arguments: "{}"}), script.Text("ok"))); err != nil {
				t.Fatal(err)
			}
		} else {
			h.Execute(xtool.WithCaller(context.Background(), thread(tc.roles)), artifact.ToolCall{ID: "1", Name: tc.tool, Arguments: "{}"})
		}
		spans := rec.Ended()
		if len(spans) != 1 {
			t.Fatalf("%v %s: %d spans", tc.roles, tc.tool, len(spans))
		}
		got := map[attribute.Key]attribute.Value{}
		for _, kv := range spans[0].Attributes() {
			got[kv.Key] = kv.Value
		}
		if r := got[policy.AttrRoles].AsStringSlice(); !reflect.DeepEqual(r, tc.roles) {
			t.Errorf("%v %s: roles on span %v", tc.roles, tc.tool, r)
		}
		if r := got[policy.AttrRule].AsString(); r != tc.rule {
			t.Errorf("%v %s: rule on span %q, want %q", tc.roles, tc.tool, r, tc.rule)
		}
		if a := got[policy.AttrAllowed].AsBool(); a != tc.allowed {
			t.Errorf("%v %s: allowed on span %v", tc.roles, tc.tool, a)
		}
	}
}

func calls(ids ...string) script.Step {
	arts := make([]artifact.Artifact, len(ids))
	for i, id := range ids {
		arts[i] = artifact.ToolCall{ID: id, Name: "fs_read_file", Arguments: "{}"}
	}
	return script.Reply(arts...)
}

// An editor may make 2 calls per answer and 3 per run: calls past either
// limit are refused with a result saying so, and a new user message starts
// a new run.
func TestLimitsAtExecution(t *testing.T) {
	reg := doorRegistry(t)
	enf := policy.NewEnforcer(reg, mustParse(t, testPolicy))
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg, enf.HandlerOptions()...)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, enf.Filter())))
	st := thread([]string{"editor"})
	prov := script.Play(calls("c1", "c2"), calls("c3", "c4"), script.Text("done"), calls("c5", "c6", "c7"), script.Text("done"))
	for _, msg := range []string{"go", "again"} {
		_ = st.Append(ledger.RoleUser, artifact.Text{Content: msg})
		if _, err := step.Run(context.Background(), st, prov); err != nil {
			t.Fatal(err)
		}
	}
	const (
		ran     = "ran fs_read_file"
		perRun  = "the call to fs_read_file was refused: your role allows 3 tool calls per request and they are used up; answer with what you have"
		perTurn = "the call to fs_read_file was refused: your role allows 2 tool calls per answer and this is call 3; use the results you have"
	)
	want := map[string]string{"c1": ran, "c2": ran, "c3": ran, "c4": perRun, "c5": ran, "c6": ran, "c7": perTurn}
	got := map[string]string{}
	for _, turn := range st.Turns() {
		for _, a := range turn.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok {
				got[r.ToolCallID] = r.Content
				if r.IsError != (r.Content != ran) {
					t.Errorf("%s: IsError %v for %q", r.ToolCallID, r.IsError, r.Content)
				}
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results:\n got %v\nwant %v", got, want)
	}
}

// The approve rules reach the Handler's approver: an editor's write asks,
// a viewer's read does not.
func TestApprovalFromPolicy(t *testing.T) {
	reg := doorRegistry(t)
	enf := policy.NewEnforcer(reg, mustParse(t, testPolicy))
	var asked []string
	h := xtool.NewHandler(reg, append(enf.HandlerOptions(), xtool.WithApprover(func(_ context.Context, tt tool.Tool, _ artifact.ToolCall) error {
		asked = append(asked, tt.Name)
		return xtool.ErrDenied
	}))...)
	for _, tc := range []struct {
		roles []string
		tool  string
		want  string
	}{
		{[]string{"editor"}, "fs_write_file", "the call to fs_write_file was not approved: xtool: call denied"},
		{[]string{"editor"}, "fs_read_file", "ran fs_read_file"},
		{[]string{"viewer"}, "fs_read_file", "ran fs_read_file"},
		{[]string{"viewer", "editor"}, "fs_write_file", "the call to fs_write_file was not approved: xtool: call denied"},
	} {
		res := h.Execute(xtool.WithCaller(context.Background(), thread(tc.roles)), artifact.ToolCall{ID: "1", Name: tc.tool, Arguments: "{}"})
		if res.Content != tc.want {
			t.Errorf("%v %s: %q, want %q", tc.roles, tc.tool, res.Content, tc.want)
		}
	}
	if want := []string{"fs_write_file", "fs_write_file"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("approver asked for %v, want %v", asked, want)
	}
}
