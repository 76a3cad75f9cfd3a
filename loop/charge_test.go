package loop_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
)

// summarising charges, before each request, a summary call of the given
// usage made with prov, as a history policy's summariser does.
func summarising(prov provider.Provider, u artifact.Usage) provider.InvokeOption {
	return provider.OptionFunc(func(ctx context.Context, _ ledger.State, _ *provider.Request) error {
		loop.Charge(ctx, prov, "history summary", u)
		return nil
	})
}

// usageEvents keeps the UsageEvents it observes.
type usageEvents struct {
	mu  sync.Mutex
	got []loop.UsageEvent
}

func (o *usageEvents) Emit(_ context.Context, ev loop.Event) {
	if u, ok := ev.(loop.UsageEvent); ok {
		o.mu.Lock()
		o.got = append(o.got, u)
		o.mu.Unlock()
	}
}

func TestChargeCountsTowardTheLimit(t *testing.T) {
	summarizer := script.New(nil, script.WithModel("cheap"))
	prices := perToken{"m": 0.001, "cheap": 0.0001}
	for _, c := range []struct {
		name    string
		usage   artifact.Usage
		wantErr error
		usedUSD float64
	}{
		// Two turns of 100 tokens at $0.001 are $0.20, under the $0.25
		// limit, and the run would go on to its answer; with a summary
		// before each (1,000 tokens at $0.0001, $0.10) the first turn
		// costs $0.20, the second summary brings it to $0.30, and the
		// second request is refused before it is sent.
		{name: "priced summaries", usage: artifact.Usage{InputTokens: 1000}, usedUSD: 0.3},
		{name: "a summary model without a price", usage: artifact.Usage{InputTokens: 1000, Model: "unknown"}, wantErr: loop.ErrUnpriced},
	} {
		t.Run(c.name, func(t *testing.T) {
			prov := script.New([]script.Step{costlyCall("c1", 100), costlyCall("c2", 100), script.Text("done")}, script.WithModel("m"))
			obs := &usageEvents{}
			step := loop.New(loop.WithHandlers(echoTools), loop.WithPricer(prices), loop.WithMaxCost(0.25),
				loop.WithObserver(obs), loop.WithInvokeOptions(summarising(summarizer, c.usage)))
			_, err := step.Run(context.Background(), userThread("go"), prov)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			var le *loop.LimitError
			if !errors.As(err, &le) || le.Limit != loop.LimitCost || le.UsedUSD < c.usedUSD-1e-9 || le.UsedUSD > c.usedUSD+1e-9 {
				t.Fatalf("err = %v, want the cost limit at $%v", err, c.usedUSD)
			}
			if err := step.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			want := loop.UsageEvent{Usage: artifact.Usage{InputTokens: 1000, Model: "cheap", CostUSD: 0.1, Priced: true}, For: "history summary"}
			if len(obs.got) != 2 || obs.got[0].For != want.For || obs.got[0].Usage.Model != "cheap" || !obs.got[0].Usage.Priced ||
				obs.got[0].Usage.CostUSD < 0.1-1e-9 || obs.got[0].Usage.CostUSD > 0.1+1e-9 {
				t.Errorf("observed %+v, want two of %+v", obs.got, want)
			}
		})
	}
}

// TestChargeOutsideATurn checks that Charge does nothing with a context
// no turn gave, and on a Step that neither prices nor reports.
func TestChargeOutsideATurn(t *testing.T) {
	u := artifact.Usage{InputTokens: 10}
	if got := loop.Charge(context.Background(), script.New(nil, script.WithModel("m")), "x", u); got != u {
		t.Errorf("Charge outside a turn = %+v, want %+v", got, u)
	}
	var seen artifact.Usage
	opt := provider.OptionFunc(func(ctx context.Context, _ ledger.State, _ *provider.Request) error {
		seen = loop.Charge(ctx, script.New(nil, script.WithModel("m")), "x", u)
		return nil
	})
	if _, err := loop.New(loop.WithInvokeOptions(opt)).Run(context.Background(), userThread("q"), script.Play(script.Text("a"))); err != nil {
		t.Fatal(err)
	}
	if seen != u {
		t.Errorf("Charge on a plain Step = %+v, want %+v", seen, u)
	}
}
