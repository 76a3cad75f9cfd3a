package history_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
)

// cacheRun answers len(cached) user turns, the i-th answer reporting
// cached[i] of 1000 input tokens, and returns the CacheLostEvents the
// observers saw.
func cacheRun(t *testing.T, w *history.CacheWatch, cached []int64, opts ...provider.InvokeOption) []history.CacheLostEvent {
	t.Helper()
	steps := make([]script.Step, len(cached))
	for i, c := range cached {
		steps[i] = script.Reply(artifact.Text{Content: fmt.Sprintf("answer %02d %s", i, strings.Repeat("a", 40))},
			artifact.Usage{InputTokens: 1000, OutputTokens: 10, CachedInputTokens: c})
	}
	prov := script.New(steps)
	var mu sync.Mutex
	var lost []history.CacheLostEvent
	step := loop.New(loop.WithHandlers(w), loop.WithObserver(loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if l, ok := ev.(history.CacheLostEvent); ok {
			mu.Lock()
			lost = append(lost, l)
			mu.Unlock()
		}
	})))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleSystem, textArt("sys"))
	for i := range cached {
		_ = th.Append(ledger.RoleUser, textArt(fmt.Sprintf("question %02d %s", i, strings.Repeat("q", 40))))
		if _, err := step.Turn(context.Background(), th, prov, opts...); err != nil {
			t.Fatal(err)
		}
	}
	if err := step.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return lost
}

func TestCacheLostWithoutPolicy(t *testing.T) {
	// Ledger: sys, then user/answer pairs; the answer to question i is at
	// index 2+2i.
	lost := cacheRun(t, history.NewCacheWatch(), []int64{0, 800, 100, 90, 0, 0, 500, 250, 124})
	want := []history.CacheLostEvent{
		{Turn: 6, Cached: 100, Input: 1000, Previous: 800},
		{Turn: 10, Cached: 0, Input: 1000, Previous: 90},
		{Turn: 18, Cached: 124, Input: 1000, Previous: 250},
	}
	if fmt.Sprint(lost) != fmt.Sprint(want) {
		t.Fatalf("lost = %+v, want %+v", lost, want)
	}
}

func TestCacheLostExpectedByBlocks(t *testing.T) {
	// Each answer is about 16 tokens and each question 15: a budget of 100
	// holds a few pairs. With blocks of 4 ledger turns, the prefix changes
	// when the ledger crosses a multiple of 4 (every other request);
	// a drop there is expected, a drop inside a block is not.
	pol, err := history.New(history.WithBudget(100), history.WithBlocks(4))
	if err != nil {
		t.Fatal(err)
	}
	cached := make([]int64, 12)
	// Ledger length at request i is 2+2i: i odd crosses an edge
	// (4, 8, ...), i even stays in the block.
	cached[5], cached[6] = 600, 100 // request 6: inside a block: lost
	cached[8], cached[9] = 600, 100 // request 9: at an edge, after the budget was passed: expected
	cached[10], cached[11] = 60, 30 // halves, not less: kept
	lost := cacheRun(t, history.NewCacheWatch(), cached, pol)
	want := []history.CacheLostEvent{{Turn: 14, Cached: 100, Input: 1000, Previous: 600}}
	if fmt.Sprint(lost) != fmt.Sprint(want) {
		t.Fatalf("lost = %+v, want %+v", lost, want)
	}
}

func TestCacheHitRatioMetric(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	w := history.NewCacheWatch(history.WithCacheMeter(mp.Meter("test")))
	cacheRun(t, w, []int64{0, 250, 500, 2000, -5})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != history.CacheHitRatioMetric {
				continue
			}
			pts := m.Data.(metricdata.Histogram[float64]).DataPoints
			// Cached counts outside 0..input are clamped: 2000 of 1000 is 1, -5 is 0.
			if len(pts) != 1 || pts[0].Count != 5 || pts[0].Sum != 0+0.25+0.5+1+0 || m.Unit != "1" {
				t.Fatalf("points = %+v unit %q, want 5 turns summing to 1.75", pts, m.Unit)
			}
			return
		}
	}
	t.Fatalf("no %s metric in %+v", history.CacheHitRatioMetric, rm)
}
