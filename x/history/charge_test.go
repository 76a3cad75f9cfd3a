package history_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
)

// flatRate prices every token of the models it names at one rate.
type flatRate map[string]float64

func (p flatRate) Cost(model string, u artifact.Usage) (float64, bool) {
	rate, ok := p[model]
	return float64(u.Total()) * rate, ok
}

// usages keeps the usage events a Step reports.
type usages struct {
	mu  sync.Mutex
	got []loop.UsageEvent
}

func (o *usages) Emit(_ context.Context, ev loop.Event) {
	if u, ok := ev.(loop.UsageEvent); ok {
		o.mu.Lock()
		o.got = append(o.got, u)
		o.mu.Unlock()
	}
}

// TestSummaryIsCharged checks that the summarizer's usage counts toward
// the turn: priced with the Step's Pricer, reported as a loop.UsageEvent,
// and bound by the run's cost limit, which an unpriced summarizer cannot
// keep.
func TestSummaryIsCharged(t *testing.T) {
	summary := script.Reply(artifact.Text{Content: "The user dictated notes."}, artifact.Usage{InputTokens: 9000, OutputTokens: 1000})
	// The limit is checked while the model still calls tools: it calls
	// one, then answers.
	answers := func() *script.Provider {
		return script.New([]script.Step{
			script.Reply(artifact.ToolCall{ID: "c1", Name: "lookup", Arguments: `{}`}, artifact.Usage{InputTokens: 90, OutputTokens: 10}),
			script.Reply(artifact.Text{Content: "Your first note."}, artifact.Usage{InputTokens: 90, OutputTokens: 10}),
		}, script.WithModel("m"))
	}
	for _, c := range []struct {
		name    string
		prices  flatRate
		max     float64
		wantErr error
	}{
		{"priced", flatRate{"m": 1e-6, "summarizer": 1e-5}, 0, nil},
		// The first answer costs $0.0001; the summary before it ($0.10)
		// takes the run past its limit.
		{"over the limit", flatRate{"m": 1e-6, "summarizer": 1e-5}, 0.05, loop.ErrLimit},
		{"unpriced summarizer", flatRate{"m": 1e-6}, 1, loop.ErrUnpriced},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum := script.New([]script.Step{summary}, script.WithModel("summarizer"))
			// One chunk, and the summary it stores covers the second
			// request too: one summarizer call in all.
			pol, err := history.New(history.WithBudget(2000), history.WithSummarizer(sum), history.WithSummarizerBudget(20000))
			if err != nil {
				t.Fatal(err)
			}
			obs := &usages{}
			opts := []loop.Option{loop.WithInvokeOptions(pol), loop.WithPricer(c.prices), loop.WithObserver(obs), loop.WithHandlers(lookup)}
			if c.max > 0 {
				opts = append(opts, loop.WithMaxCost(c.max))
			}
			step := loop.New(opts...)
			_, err = step.Run(context.Background(), notes(60), answers())
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := step.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if len(obs.got) != 1 {
				t.Fatalf("usage events %+v, want one", obs.got)
			}
			got := obs.got[0]
			if got.For != history.SummaryUsage || got.Usage.Model != "summarizer" || !got.Usage.Priced || got.Usage.CostUSD < 0.1-1e-9 || got.Usage.CostUSD > 0.1+1e-9 {
				t.Errorf("usage event %+v, want the summary's $0.10", got)
			}
		})
	}
}
