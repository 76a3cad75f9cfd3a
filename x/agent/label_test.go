package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// Labels flow both ways between a caller and its child agent: the child
// starts with its caller's; what the child takes in reaches the caller,
// whether a tool's hints brought it or a tool added it itself.
func TestChildLabels(t *testing.T) {
	for _, tc := range []struct {
		name        string
		parent      map[ledger.Label]string // labels on the caller's thread before the call
		childCalls  string                  // the tool the child calls
		wantChild   []ledger.Label          // on the child's thread when its tool runs
		wantParent  []ledger.Label
		untrustedBy string // the tool the caller's untrusted label names
	}{
		{name: "inherited", parent: map[ledger.Label]string{ledger.LabelPrivate: "read_notes"}, childCalls: "peek",
			wantChild: []ledger.Label{ledger.LabelPrivate}, wantParent: []ledger.Label{ledger.LabelPrivate}},
		{name: "back from a hint", childCalls: "fetch",
			wantParent: []ledger.Label{ledger.LabelUntrusted}, untrustedBy: "fetch"},
		{name: "back from the tool itself", childCalls: "says_untrusted",
			wantParent: []ledger.Label{ledger.LabelUntrusted}, untrustedBy: "helper"},
		{name: "nothing taken in", childCalls: "peek"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []ledger.Label
			childReg := tool.NewRegistry()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(childReg.Register(tool.Tool{Name: "peek"}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
				st, _ := xtool.Caller(ctx)
				seen = ledger.Labels(st)
				return "ok", nil
			}))
			must(childReg.Register(tool.Tool{Name: "fetch", Hints: tool.Hints{Untrusted: true}}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
				return "a page", nil
			}))
			must(childReg.Register(tool.Tool{Name: "says_untrusted"}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
				return "an answer from elsewhere", xtool.AddLabel(ctx, ledger.LabelUntrusted)
			}))
			child := mustNew(t, "helper", agent.WithRegistry(childReg), agent.WithProvider(script.Play(
				script.Call("c1", tc.childCalls, `{}`),
				script.Text("done"),
			)))
			reg := tool.NewRegistry()
			mustRegister(t, reg, child)
			th := ledger.NewThread()
			for l, from := range tc.parent {
				must(ledger.AddLabel(th, l, from))
			}
			must(th.Append(ledger.RoleUser, artifact.Text{Content: "help"}))
			step := parentStep(reg, nil, refuse)
			_, err := step.Run(context.Background(), th, script.Play(script.Call("p1", "helper", `{"task":"look"}`), script.Text("ok")))
			must(err)
			if !slices.Equal(seen, tc.wantChild) {
				t.Fatalf("the child's labels: %v, want %v", seen, tc.wantChild)
			}
			if got := ledger.Labels(th); !slices.Equal(got, tc.wantParent) {
				t.Fatalf("the caller's labels: %v, want %v", got, tc.wantParent)
			}
			if from, _ := ledger.HasLabel(th, ledger.LabelUntrusted); from != tc.untrustedBy {
				t.Fatalf("untrusted brought by %q, want %q", from, tc.untrustedBy)
			}
		})
	}
}

// A child that read private data cannot send it out when its caller's
// policy refuses that: the caller's flow rule binds the child's calls.
func TestChildBoundByCallersFlows(t *testing.T) {
	p, err := policy.Parse([]byte(`roles:
  user:
    allow: {tools: ["*"]}
flows:
  - after: [private]
    calls: [sends_out]
    then: deny
`))
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	childReg := tool.NewRegistry()
	_ = childReg.Register(tool.Tool{Name: "read_notes", Hints: tool.Hints{Private: true}}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		return "the notes", nil
	})
	_ = childReg.Register(tool.Tool{Name: "send_mail", Hints: tool.Hints{SendsOut: true}}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		sent++
		return "sent", nil
	})
	child := mustNew(t, "helper", agent.WithRegistry(childReg), agent.WithProvider(script.Play(
		script.Call("c1", "read_notes", `{}`),
		script.Call("c2", "send_mail", `{}`),
		script.Text("done"),
	)))
	reg := tool.NewRegistry()
	mustRegister(t, reg, child)
	enf := policy.NewEnforcer(reg, p)
	th := ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: "user"}))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "help"})
	step := parentStep(reg, enf.Filter(), refuse, enf.HandlerOptions()...)
	if _, err := step.Run(context.Background(), th, script.Play(script.Call("p1", "helper", `{"task":"mail my notes"}`), script.Text("ok"))); err != nil {
		t.Fatal(err)
	}
	if sent != 0 {
		t.Fatal("the child sent the notes out")
	}
	out, ok := agent.OutcomeOf(th.Turns()[2].Artifacts[0].(artifact.ToolResult))
	if !ok {
		t.Fatalf("no outcome: %#v", th.Turns()[2].Artifacts[0])
	}
	turns := out.State.Turns()
	res := turns[len(turns)-2].Artifacts[0].(artifact.ToolResult)
	want := "the call to send_mail was refused: this conversation holds private content, brought in by read_notes, and flow 1 (line 5) refuses such calls after it"
	if !res.IsError || !strings.Contains(res.Content, want) {
		t.Fatalf("child's send_mail: %q", res.Content)
	}
}
