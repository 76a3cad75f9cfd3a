package loop_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

type benchLookupIn struct {
	Query  string   `json:"query" jsonschema:"description=What to look for, in a few words."`
	Limit  int      `json:"limit,omitempty" jsonschema:"description=How many records to return at most (1 to 100).,minimum=1,maximum=100"`
	Fields []string `json:"fields,omitempty" jsonschema:"description=Which fields of each record to return; all when empty."`
}

// BenchmarkEstimateInput is the admission's estimate of one request: a
// user message and the registry's snapshot of n typed tools.
func BenchmarkEstimateInput(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			reg := tool.NewRegistry()
			for i := range n {
				if err := tool.RegisterFunc(reg, fmt.Sprintf("tool_%04d", i), "Looks records up in the archive.",
					func(context.Context, benchLookupIn) (string, error) { return "", nil }); err != nil {
					b.Fatal(err)
				}
			}
			th := ledger.NewThread(ledger.WithClock(nil))
			_ = th.Append(ledger.RoleUser, artifact.Text{Content: "look it up"})
			req := &provider.Request{Turns: th.Turns(), Tools: reg.Tools()}
			b.ReportAllocs()
			for b.Loop() {
				if loop.EstimateInput(req) <= 0 {
					b.Fatal("no estimate")
				}
			}
		})
	}
}
