package loop_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
)

// perToken prices every token of a model at one rate, in dollars.
type perToken map[string]float64

func (p perToken) Cost(model string, u artifact.Usage) (float64, bool) {
	rate, ok := p[model]
	return float64(u.Total()) * rate, ok
}

func costlyCall(id string, tokens int64) script.Step {
	return script.Reply(artifact.ToolCall{ID: id, Name: "look", Arguments: `{}`}, artifact.Usage{InputTokens: tokens})
}

func usages(th *ledger.Thread) []artifact.Usage {
	var out []artifact.Usage
	for _, t := range th.Turns() {
		for _, a := range t.Artifacts {
			if u, ok := a.(artifact.Usage); ok {
				out = append(out, u)
			}
		}
	}
	return out
}

func TestPricerStoresCost(t *testing.T) {
	prov := script.New([]script.Step{costlyCall("c1", 100), script.Reply(artifact.Text{Content: "done"}, artifact.Usage{InputTokens: 10, OutputTokens: 40, Model: "big"})},
		script.WithModel("small"))
	th := userThread("go")
	step := loop.New(loop.WithHandlers(echoTools), loop.WithPricer(perToken{"small": 0.01}))
	if _, err := step.Run(context.Background(), th, prov); err != nil {
		t.Fatal(err)
	}
	got := usages(th)
	want := []artifact.Usage{
		{InputTokens: 100, Model: "small", CostUSD: 1, Priced: true},
		{InputTokens: 10, OutputTokens: 40, Model: "big"}, // the model the provider named has no price
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("usages = %+v, want %+v", got, want)
	}
}

func TestMaxCost(t *testing.T) {
	prices := perToken{"m": 0.001}
	cases := []struct {
		name    string
		opts    []loop.Option
		model   string
		wantErr error
		limit   bool // a *LimitError for LimitCost, refusing the second request
		invoked int  // requests the provider received
	}{
		{name: "refuses what may pass it", opts: []loop.Option{loop.WithPricer(prices), loop.WithMaxCost(0.15)}, model: "m", limit: true, invoked: 1},
		{name: "under the limit", opts: []loop.Option{loop.WithPricer(prices), loop.WithMaxCost(10)}, model: "m", invoked: 4},
		{name: "unpriced model", opts: []loop.Option{loop.WithPricer(prices), loop.WithMaxCost(1)}, model: "other", wantErr: loop.ErrUnpriced},
		{name: "no pricer", opts: []loop.Option{loop.WithMaxCost(1)}, model: "m", wantErr: loop.ErrUnpriced},
		{name: "unnamed model", opts: []loop.Option{loop.WithPricer(prices), loop.WithMaxCost(1)}, wantErr: loop.ErrUnpriced},
		{name: "negative limit", opts: []loop.Option{loop.WithPricer(prices), loop.WithMaxCost(-1)}, model: "m", wantErr: loop.ErrUnpriced},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prov := script.New([]script.Step{costlyCall("c1", 100), costlyCall("c2", 100), costlyCall("c3", 100), script.Text("done")}, script.WithModel(c.model))
			th := userThread("go")
			_, err := loop.New(append(c.opts, loop.WithHandlers(echoTools))...).Run(context.Background(), th, prov)
			if got := len(prov.Requests()); got != c.invoked {
				t.Errorf("provider invoked %d times, want %d", got, c.invoked)
			}
			switch {
			case c.wantErr != nil:
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				if n := len(th.Turns()); n != 1 {
					t.Fatalf("a refused run appended: %d turns", n)
				}
			case c.limit:
				var le *loop.LimitError
				if !errors.As(err, &le) || le.Limit != loop.LimitCost || !errors.Is(err, loop.ErrLimit) {
					t.Fatalf("err = %v, want a cost LimitError", err)
				}
				// The first answer cost $0.10; the second request, with
				// at least 16 answer tokens, could pass the $0.15: it is
				// refused before it is sent.
				if le.UsedUSD != 0.1 || le.MaxUSD != 0.15 || le.Used != 100000 || le.Max != 150000 || le.NextUSD <= 0.05 {
					t.Fatalf("limit = %+v", le)
				}
				if got, want := err.Error(), fmt.Sprintf("loop: cost limit reached ($0.1000 of $0.1500 spent; the next request may cost $%.4f)", le.NextUSD); got != want {
					t.Fatalf("message = %q, want %q", got, want)
				}
				// The first request was capped to what the limit could pay.
				if mt := prov.Requests()[0].MaxTokens; mt <= 0 || mt > 150 {
					t.Fatalf("first request's MaxTokens = %d", mt)
				}
				// What the run did is kept: user, one call and its result.
				if n := len(th.Turns()); n != 3 {
					t.Fatalf("thread has %d turns, want 3", n)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A child run started from a tool call counts toward its caller's limit,
// priced with the caller's Pricer.
func TestMaxCostCountsChildRuns(t *testing.T) {
	child := loop.New(loop.WithHandlers(echoTools))
	childProv := script.New([]script.Step{costlyCall("k1", 300), script.Text("child done")}, script.WithModel("m"))
	spawn := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		c, ok := a.(artifact.ToolCall)
		if !ok {
			return nil
		}
		th := userThread("sub")
		_, err := child.Run(ctx, th, childProv)
		content := "ok"
		if err != nil {
			content = err.Error()
		}
		e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: content},
		}})
		return nil
	})
	prov := script.New([]script.Step{costlyCall("c1", 10), costlyCall("c2", 10), script.Text("done")}, script.WithModel("m"))
	step := loop.New(loop.WithHandlers(spawn), loop.WithPricer(perToken{"m": 0.001}), loop.WithMaxCost(0.2))
	_, err := step.Run(context.Background(), userThread("go"), prov)
	var le *loop.LimitError
	if !errors.As(err, &le) || le.Limit != loop.LimitCost {
		t.Fatalf("err = %v, want a cost limit", err)
	}
	// The parent's call (0.01) and the child's (0.3): over 0.2 after the
	// first parent turn, which the child's turns were inside.
	if le.UsedUSD < 0.3 || le.UsedUSD > 0.32 {
		t.Fatalf("used = %v, want the child's cost counted", le.UsedUSD)
	}
}

// A model the provider names mid-run without a price ends a limited run:
// the limit would otherwise cover only part of it.
func TestMaxCostUnpricedAnswer(t *testing.T) {
	prov := script.New([]script.Step{
		script.Reply(artifact.ToolCall{ID: "c1", Name: "look", Arguments: `{}`}, artifact.Usage{InputTokens: 5, Model: "m-2026-preview"}),
		script.Text("done"),
	}, script.WithModel("m"))
	_, err := loop.New(loop.WithHandlers(echoTools), loop.WithPricer(perToken{"m": 0.001}), loop.WithMaxCost(1)).
		Run(context.Background(), userThread("go"), prov)
	if !errors.Is(err, loop.ErrUnpriced) {
		t.Fatalf("err = %v, want ErrUnpriced", err)
	}
}

var _ provider.Provider = (*script.Provider)(nil)

func TestMeterRecordsTokensAndCost(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	prov := script.New([]script.Step{costlyCall("c1", 100), script.Reply(artifact.Text{Content: "done"}, artifact.Usage{InputTokens: 10, OutputTokens: 40})},
		script.WithModel("m"))
	step := loop.New(loop.WithHandlers(echoTools), loop.WithPricer(perToken{"m": 0.001}), loop.WithMeter(mp.Meter("test")))
	if _, err := step.Run(context.Background(), userThread("go"), prov); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var tokens map[string]int64
	var cost float64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				if m.Name != "gen_ai.client.token.usage" || m.Unit != "{token}" {
					t.Errorf("histogram %s (%s)", m.Name, m.Unit)
				}
				tokens = map[string]int64{}
				for _, p := range d.DataPoints {
					typ, _ := p.Attributes.Value("gen_ai.token.type")
					model, _ := p.Attributes.Value("gen_ai.request.model")
					if model.AsString() != "m" {
						t.Errorf("model attribute %q", model.AsString())
					}
					tokens[typ.AsString()] += p.Sum
				}
			case metricdata.Sum[float64]:
				if m.Name != "lode.cost" || m.Unit != "USD" {
					t.Errorf("sum %s (%s)", m.Name, m.Unit)
				}
				for _, p := range d.DataPoints {
					cost += p.Value
				}
			}
		}
	}
	if tokens["input"] != 110 || tokens["output"] != 40 {
		t.Errorf("tokens = %v", tokens)
	}
	if cost < 0.149999 || cost > 0.150001 {
		t.Errorf("cost = %v, want 0.15", cost)
	}
}
