package guard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/guard"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// BenchmarkGuardedRun is a run as a door makes it: the user's message, a
// call to a tool that returns a 4 KiB page, and a 2 KiB answer streamed to
// an observer; with no guards, with the built-ins lode.yaml offers, and
// with those plus a rule at every checkpoint.
func BenchmarkGuardedRun(b *testing.B) {
	page := strings.Repeat("Opening hours are nine to five, Monday to Saturday. ", 80)[:4096]
	answer := strings.Repeat("The shop opens at nine and closes at five. ", 50)[:2048]
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "web__fetch", Description: "Fetch a page"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		return page, nil
	}); err != nil {
		b.Fatal(err)
	}
	rule, err := guard.Rule{Name: "no-wires", Contains: []string{"wire transfer", "iban"}}.Guard()
	if err != nil {
		b.Fatal(err)
	}
	builtIns := []loop.Guard{guard.Secrets("sk-bench-0123456789abcdef"), guard.HiddenText(), guard.Injection(),
		guard.MaxBytes(artifact.AtInput, 20000), guard.MaxBytes(artifact.AtResult, 200000), guard.MaxBytes(artifact.AtOutput, 50000)}
	for _, c := range []struct {
		name   string
		guards []loop.Guard
	}{
		{"none", nil},
		{"built-ins", builtIns},
		{"built-ins+rule", append(builtIns[:len(builtIns):len(builtIns)], rule)},
	} {
		b.Run(c.name, func(b *testing.B) {
			step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithGuards(c.guards...),
				loop.WithObserver(loop.EmitterFunc(func(context.Context, loop.Event) {})))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				prov := script.New([]script.Step{script.Call("c1", "web__fetch", `{"url":"https://shop.example/hours"}`), script.Text(answer)}, script.WithChunkSize(32))
				th := ledger.NewThread(ledger.WithClock(nil))
				_ = th.Append(ledger.RoleUser, artifact.Text{Content: "When is the shop open?"})
				if _, err := step.Run(ctx, th, prov); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = step.Flush(ctx)
		})
	}
}
