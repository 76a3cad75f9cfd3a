package injection

import (
	"context"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// BenchmarkContainment times whole runs through the loop with the flow
// rules off and on, and reports the cost per assistant turn: what the
// rules add is the gate and the approval rule on each call, and the
// labels' metadata reads.
func BenchmarkContainment(b *testing.B) {
	bank := bankSuite()
	task := func(id string) UserTask {
		for _, t := range bank.Tasks {
			if t.ID == id {
				return t
			}
		}
		b.Fatalf("no task %q", id)
		return UserTask{}
	}
	for _, sc := range []struct {
		name  string
		task  UserTask
		inj   *InjectionTask
		model Model
	}{
		// A read and an answer: nothing for the rules to stop.
		{"balance", task("balance"), nil, Task},
		// A bill carrying an order to pay the attacker, obeyed.
		{"bill, attacked", task("pay a bill"), &bank.Injections[0], Obedient},
	} {
		for _, on := range []bool{false, true} {
			name := sc.name + "/rules off"
			if on {
				name = sc.name + "/rules on"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				turns := 0
				b.ReportAllocs()
				start := time.Now()
				for b.Loop() {
					o, err := Run(ctx, bank, sc.task, sc.inj, Config{Model: sc.model, On: on})
					if err != nil {
						b.Fatal(err)
					}
					turns += o.Turns
				}
				b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(turns), "ns/turn")
				b.ReportMetric(float64(turns)/float64(b.N), "turns/op")
			})
		}
	}
}

// BenchmarkRulesPerTurn times one turn that calls a tool which sends data
// out, on a thread that has read nothing, so the call runs either way:
// the difference between the two is what the rules cost a turn that they
// let through (a gate and an approval rule, each a metadata read).
func BenchmarkRulesPerTurn(b *testing.B) {
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "send_mail", Hints: tool.Hints{SendsOut: true}},
		func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "sent", nil }); err != nil {
		b.Fatal(err)
	}
	deny := xtool.WithApprover(func(context.Context, tool.Tool, artifact.ToolCall) error { return errDenied })
	for _, on := range []bool{false, true} {
		name := "rules off"
		opts := []xtool.HandlerOption{deny}
		var filter xtool.ToolFilter
		if on {
			name = "rules on"
			enf, err := containment(reg)
			if err != nil {
				b.Fatal(err)
			}
			opts = append(opts, enf.HandlerOptions()...)
			filter = enf.Filter()
		}
		b.Run(name, func(b *testing.B) {
			step := loop.New(loop.WithHandlers(xtool.NewHandler(reg, opts...)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, filter)))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				th := ledger.NewThread(ledger.WithClock(nil), ledger.WithMetadata(map[string]string{policy.RolesKey: "user"}))
				_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Mail bob."})
				if _, err := step.Turn(ctx, th, script.Play(script.Call("c1", "send_mail", `{}`))); err != nil {
					b.Fatal(err)
				}
				if r := th.Turns()[2].Artifacts[0].(artifact.ToolResult); r.IsError {
					b.Fatal(r.Content)
				}
			}
		})
	}
}
