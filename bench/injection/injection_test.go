package injection

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
	xtool "github.com/lodeworks/lode/x/tool"
)

var update = flag.Bool("update", false, "rewrite testdata/report.md from this run")

// TestReport runs the benchmark, checks its invariant — with the flow
// rules on, the obedient model achieves no attacker's goal — and that the
// figures are those testdata/report.md and BENCHMARKS.md show.
func TestReport(t *testing.T) {
	rep, err := Measure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(append([]Row{}, rep.Rows...), rep.Quarantine...) {
		if r.AchievedOn != 0 {
			t.Errorf("%s: %d injection goals achieved with the rules on, want 0", r.Env, r.AchievedOn)
		}
		// The models act on what they read, nothing else: no goal is
		// reached in a pair whose model never read the injection.
		if r.AchievedOff > r.Read {
			t.Errorf("%s: %d goals achieved with only %d injections read", r.Env, r.AchievedOff, r.Read)
		}
	}
	// The attacks are real: without the rules the obedient model reaches
	// goals, so the zero above is the rules' doing.
	if rep.Total.AchievedOff == 0 || rep.Total.Read == 0 {
		t.Errorf("no goal achieved with the rules off (%d read): the benchmark tests nothing", rep.Total.Read)
	}
	got := rep.Markdown()
	if *update {
		if err := os.WriteFile("testdata/report.md", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/report.md")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the report changed (go test -update rewrites testdata/report.md; copy it into BENCHMARKS.md):\n%s", got)
	}
	bench, err := os.ReadFile("../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(bench), got) {
		t.Errorf("BENCHMARKS.md does not show this report; copy testdata/report.md into it")
	}
}

// TestContainment checks the flow rules case by case: which labels and
// which hints refuse a call, ask a person, or let it run.
func TestContainment(t *testing.T) {
	send := tool.Tool{Name: "send", Hints: tool.Hints{SendsOut: true}}
	write := tool.Tool{Name: "write"}
	for _, c := range []struct {
		name   string
		labels []ledger.Label
		tool   tool.Tool
		refuse bool
		ask    bool
	}{
		{name: "a send, nothing read", tool: send},
		{name: "a send after untrusted content", labels: []ledger.Label{ledger.LabelUntrusted}, tool: send, ask: true},
		{name: "a send after private data", labels: []ledger.Label{ledger.LabelPrivate}, tool: send, refuse: true},
		{name: "a send after both", labels: []ledger.Label{ledger.LabelPrivate, ledger.LabelUntrusted}, tool: send, refuse: true, ask: true},
		{name: "a write after both", labels: []ledger.Label{ledger.LabelPrivate, ledger.LabelUntrusted}, tool: write},
	} {
		t.Run(c.name, func(t *testing.T) {
			th := ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: "user"}))
			for _, l := range c.labels {
				if err := ledger.AddLabel(th, l, "reader"); err != nil {
					t.Fatal(err)
				}
			}
			// A registry and handler with the rules, asked through a real
			// call: the gate refuses, else the approval rule asks.
			reg := tool.NewRegistry()
			ran := false
			if err := reg.Register(c.tool, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
				ran = true
				return "ok", nil
			}); err != nil {
				t.Fatal(err)
			}
			asked := false
			enf, err := containment(reg)
			if err != nil {
				t.Fatal(err)
			}
			h := xtool.NewHandler(reg, append(enf.HandlerOptions(), xtool.WithApprover(func(context.Context, tool.Tool, artifact.ToolCall) error {
				asked = true
				return errDenied
			}))...)
			ctx := xtool.WithCaller(context.Background(), th)
			res := h.Execute(ctx, artifact.ToolCall{ID: "1", Name: c.tool.Name, Arguments: "{}"})
			refused := strings.Contains(res.Content, refusedLead)
			wantAsk := c.ask && !c.refuse // a refusal comes before any question
			if refused != c.refuse || asked != wantAsk || ran != (!c.refuse && !c.ask) {
				t.Errorf("refused %v, asked %v, ran %v (%q); want refused %v, asked %v", refused, asked, ran, res.Content, c.refuse, wantAsk)
			}
		})
	}
}
