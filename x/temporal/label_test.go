package temporal_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
	xtool "github.com/lodeworks/lode/x/tool"
)

// Calls that bring labels in, run in parallel as activities that write
// one stored thread at the same time, leave their labels in the store
// (where any worker reads them) and every result shown: a conflicting
// label write is written again, not a withheld result.
func TestLabelsKeptByTheStore(t *testing.T) {
	s, id := thread(t, "go")
	reg := tool.NewRegistry()
	for name, h := range map[string]tool.Hints{"fetch": {Untrusted: true}, "notes": {Private: true}, "calc": {}} {
		if err := reg.Register(tool.Tool{Name: name, Hints: h}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
			return name + " ran", nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	var calls []artifact.Artifact
	for i, n := range []string{"calc", "fetch", "notes", "fetch", "notes", "calc"} {
		calls = append(calls, artifact.ToolCall{ID: "c" + string(rune('1'+i)), Name: n, Arguments: `{}`})
	}
	a, err := lt.New(s, script.Play(script.Reply(calls...), script.Text("done")), lt.WithHandler(xtool.NewHandler(reg)), lt.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	st := mustLoad(t, s, id)
	if got := ledger.Labels(st); !slices.Equal(got, ledger.KnownLabels()) {
		t.Fatalf("stored labels %v", got)
	}
	if from, _ := ledger.HasLabel(st, ledger.LabelUntrusted); from != "fetch" {
		t.Fatalf("untrusted from %q", from)
	}
	for _, art := range st.Turns()[2].Artifacts {
		if r := art.(artifact.ToolResult); r.IsError {
			t.Fatalf("%s: %s", r.ToolCallID, r.Content)
		}
	}
}

// A child agent run as a child workflow starts with its caller's labels.
func TestChildStartsWithTheCallersLabels(t *testing.T) {
	f := newFamily(t,
		[]script.Step{script.Call("c1", "helper", `{"task":"look"}`), script.Text("done")},
		[]script.Step{script.Text("found it")}, nil)
	st, err := f.s.Load(context.Background(), f.id)
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.AddLabel(st, ledger.LabelUntrusted, "web__fetch"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	e := newEnv(f.a)
	e.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: f.id})
	if err := e.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	child := mustLoad(t, f.s, lt.ChildThreadID(f.id, "c1"))
	if from, ok := ledger.HasLabel(child, ledger.LabelUntrusted); !ok || from != "web__fetch" {
		t.Fatalf("the child's untrusted label: %q, %v", from, ok)
	}
}
