package policy_test

import (
	"context"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// BenchmarkSpendTurn1000Tools is one turn offering 1,000 tools through the
// policy's filter, without spend limits and with usd_per_run, or
// usd_per_day on a file store's counters: what admitting the whole request
// adds to a turn.
func BenchmarkSpendTurn1000Tools(b *testing.B) {
	reg := manyTools(b, 1000)
	cases := []struct{ name, doc string }{
		{"no limit", "roles:\n  r:\n    allow: {tools: ['*']}\n"},
		{"usd_per_run", "roles:\n  r:\n    allow: {tools: ['*']}\n    limits: {usd_per_run: 1000}\n"},
		{"usd_per_day file store", "roles:\n  r:\n    allow: {tools: ['*']}\n    limits: {usd_per_day: 1000000}\n"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			store, err := file.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			enf := policy.NewEnforcer(reg, mustParse(b, c.doc), policy.WithSpend(store, miniPrices, "mini"),
				policy.WithSpendClock(func() time.Time { return day1 }))
			step := loop.New(loop.WithPricer(miniPrices),
				loop.WithInvokeOptions(enf.SpendLimit(), xtool.WithFilteredTools(reg, enf.Filter()), provider.WithMaxTokens(100)))
			reply := script.Reply(artifact.Text{Content: "done"}, artifact.Usage{InputTokens: 1000, OutputTokens: 10})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				th := ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: "r"}), ledger.WithClock(nil))
				_ = th.Append(ledger.RoleUser, artifact.Text{Content: "look it up"})
				if _, err := step.Turn(ctx, th, script.New([]script.Step{reply}, script.WithModel("mini"))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
