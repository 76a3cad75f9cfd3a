package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

type addIn struct {
	A     int    `json:"a"`
	B     int    `json:"b"`
	Label string `json:"label"`
}

type addOut struct {
	Sum   int    `json:"sum"`
	Label string `json:"label"`
}

const addArgs = `{"a":40,"b":2,"label":"answer"}`

func addFn(_ context.Context, in addIn) (addOut, error) {
	return addOut{Sum: in.A + in.B, Label: in.Label}, nil
}

// addDispatch returns one call of the add tool through a Handler, the
// measured side of the dispatch ratio.
func addDispatch(tb testing.TB) func() {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "add", "Add a and b", addFn); err != nil {
		tb.Fatal(err)
	}
	h := xtool.NewHandler(reg)
	c := artifact.ToolCall{ID: "c1", Name: "add", Arguments: addArgs}
	e := loop.EmitterFunc(func(context.Context, loop.Event) {})
	ctx := context.Background()
	return func() {
		if err := h.Handle(ctx, c, e); err != nil {
			tb.Fatal(err)
		}
	}
}

// addBaseline is the floor the ratio divides by: decoding the same
// arguments and encoding the same result with encoding/json.
func addBaseline(tb testing.TB) func() {
	raw := []byte(addArgs)
	ctx := context.Background()
	return func() {
		var in addIn
		if err := json.Unmarshal(raw, &in); err != nil {
			tb.Fatal(err)
		}
		out, _ := addFn(ctx, in)
		if _, err := json.Marshal(out); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkDispatchAdd is the side-by-side pair of issue 14: the add tool
// through the Handler, and the bare JSON baseline.
func BenchmarkDispatchAdd(b *testing.B) {
	for _, bc := range []struct {
		name string
		mk   func(testing.TB) func()
	}{{"handler", addDispatch}, {"json-baseline", addBaseline}} {
		b.Run(bc.name, func(b *testing.B) {
			f := bc.mk(b)
			b.ReportAllocs()
			for b.Loop() {
				f()
			}
		})
	}
}

// maxDispatchAllocs is issue 14's bound on the allocations of one call of
// the add tool through the Handler.
const maxDispatchAllocs = 15

func TestDispatchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own account")
	}
	f := addDispatch(t)
	if n := testing.AllocsPerRun(200, f); n > maxDispatchAllocs {
		t.Fatalf("one call through the Handler allocates %v times, want at most %d", n, maxDispatchAllocs)
	}
}

// TestDispatchRatio measures the dispatch ratio of issue 14 as interleaved
// rounds: each round times the baseline and the Handler back to back, in
// alternating order, so that the load of a shared machine falls on both. It
// logs the median and range of the per-round ratios, by wall time and by
// the process's CPU time, and the allocations of each side. Beside them it
// times the baseline with the tool's function run on a goroutine of its
// own: the least that keeping a tool that ignores its context from
// stalling the caller adds, whatever the Handler does. It runs only when
// LODE_BENCH_ROUNDS gives the number of rounds:
//
//	LODE_BENCH_ROUNDS=101 go test -run TestDispatchRatio -v ./x/tool
func TestDispatchRatio(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("LODE_BENCH_ROUNDS"))
	if rounds <= 0 {
		t.Skip("set LODE_BENCH_ROUNDS to measure")
	}
	handler, baseline := addDispatch(t), addBaseline(t)
	handedOff := addBaselineHandedOff(t)
	type sample struct{ wall, cpu time.Duration }
	timeN := func(f func(), n int) sample {
		runtime.GC() // each side starts with a clean heap
		c, w := cpuTime(), time.Now()
		for range n {
			f()
		}
		return sample{time.Since(w), cpuTime() - c}
	}
	// Size a round so that the baseline runs for about 10 ms.
	n := 500
	for timeN(baseline, n).wall < 10*time.Millisecond && n < 1<<24 {
		n *= 2
	}
	var wall, cpu, floorWall, floorCPU, hns, bns []float64
	for r := range rounds {
		var h, b, f sample
		switch r % 3 { // each side in each place of the round in turn
		case 0:
			b, h, f = timeN(baseline, n), timeN(handler, n), timeN(handedOff, n)
		case 1:
			h, f, b = timeN(handler, n), timeN(handedOff, n), timeN(baseline, n)
		default:
			f, b, h = timeN(handedOff, n), timeN(baseline, n), timeN(handler, n)
		}
		wall = append(wall, float64(h.wall)/float64(b.wall))
		floorWall = append(floorWall, float64(f.wall)/float64(b.wall))
		if b.cpu > 0 {
			cpu = append(cpu, float64(h.cpu)/float64(b.cpu))
			floorCPU = append(floorCPU, float64(f.cpu)/float64(b.cpu))
		}
		hns = append(hns, float64(h.wall)/float64(n))
		bns = append(bns, float64(b.wall)/float64(n))
	}
	summary := func(xs []float64) string {
		if len(xs) == 0 {
			return "not measured"
		}
		slices.Sort(xs)
		return fmt.Sprintf("median %.2f× (range %.2f–%.2f×)", xs[len(xs)/2], xs[0], xs[len(xs)-1])
	}
	slices.Sort(hns)
	slices.Sort(bns)
	t.Logf("%d rounds of %d calls; wall time %s; CPU time %s; handler %.0f ns, baseline %.0f ns (medians); allocations %v vs %v",
		rounds, n, summary(wall), summary(cpu), hns[rounds/2], bns[rounds/2],
		testing.AllocsPerRun(100, handler), testing.AllocsPerRun(100, baseline))
	t.Logf("the baseline with the function on a goroutine: wall time %s; CPU time %s", summary(floorWall), summary(floorCPU))
}

// addBaselineHandedOff is addBaseline with the tool's function run on a
// goroutine of its own and waited for, as a call that must not stall its
// caller has to run.
func addBaselineHandedOff(tb testing.TB) func() {
	raw := []byte(addArgs)
	ctx := context.Background()
	done := make(chan addOut, 1)
	return func() {
		var in addIn
		if err := json.Unmarshal(raw, &in); err != nil {
			tb.Fatal(err)
		}
		go func() {
			out, _ := addFn(ctx, in)
			done <- out
		}()
		if _, err := json.Marshal(<-done); err != nil {
			tb.Fatal(err)
		}
	}
}
