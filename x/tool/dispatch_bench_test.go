package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
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
// measured side of the dispatch ratio; funcOpts go to the tool (WithInline
// for the inline path).
func addDispatch(tb testing.TB, funcOpts ...tool.FuncOption) func() {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "add", "Add a and b", addFn, funcOpts...); err != nil {
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

// addDispatchInline is addDispatch for the add tool marked tool.WithInline.
func addDispatchInline(tb testing.TB) func() { return addDispatch(tb, tool.WithInline()) }

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
// through the Handler, on a goroutine of its own and (issue 35) inline, and
// the bare JSON baseline.
func BenchmarkDispatchAdd(b *testing.B) {
	for _, bc := range []struct {
		name string
		mk   func(testing.TB) func()
	}{
		{"handler", func(tb testing.TB) func() { return addDispatch(tb) }},
		{"handler-inline", addDispatchInline},
		{"json-baseline", addBaseline},
	} {
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
// the add tool through the Handler; maxInlineAllocs is issue 35's, for the
// same call inline.
const (
	maxDispatchAllocs = 15
	maxInlineAllocs   = 9
)

func TestDispatchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own account")
	}
	for _, tc := range []struct {
		name string
		f    func()
		max  int
	}{
		{"one call through the Handler, on a goroutine", addDispatch(t), maxDispatchAllocs},
		{"one call through the Handler, inline", addDispatchInline(t), maxInlineAllocs},
		{"one run of the add scenario, on a goroutine", addRun(t), maxRunAllocs},
		{"one run of the add scenario, inline", addRun(t, tool.WithInline()), maxInlineRunAllocs},
	} {
		if n := testing.AllocsPerRun(200, tc.f); n > float64(tc.max) {
			t.Errorf("%s allocates %v times, want at most %d", tc.name, n, tc.max)
		}
	}
}

// addModel answers a question with a call of add, and the call's result
// with a final answer quoting it: issue 47's scenario, the one bench/eino
// times against Eino's react agent.
type addModel struct{}

func (addModel) Invoke(_ context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		last := req.Turns[len(req.Turns)-1]
		if last.Role == ledger.RoleTool {
			r, _ := last.Artifacts[0].(artifact.ToolResult)
			yield(artifact.Text{Content: "sum: " + r.Content}, nil)
			return
		}
		yield(artifact.ToolCall{ID: "call_1", Name: "add", Arguments: addArgs}, nil)
	}
}

// addRun returns one whole run of that scenario as users build it: a new
// ledger.Thread, the question, and loop.Step.Run with the add tool
// registered by tool.RegisterFunc behind a Handler.
func addRun(tb testing.TB, funcOpts ...tool.FuncOption) func() {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "add", "Add a and b", addFn, funcOpts...); err != nil {
		tb.Fatal(err)
	}
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	ctx := context.Background()
	return func() {
		th := ledger.NewThread()
		if err := th.Append(ledger.RoleUser, artifact.Text{Content: "What is 40 + 2?"}); err != nil {
			tb.Fatal(err)
		}
		st, err := step.Run(ctx, th, addModel{})
		if err != nil {
			tb.Fatal(err)
		}
		turns := st.Turns()
		if len(turns) != 4 || turns[3].Artifacts[0] != (artifact.Text{Content: `sum: {"sum":42,"label":"answer"}`}) {
			tb.Fatalf("turns %+v", turns)
		}
	}
}

// maxRunAllocs bounds the allocations of that whole run (issue 47), on a
// goroutine of its own and inline: the loop's share of it is what a
// user's every turn pays.
const (
	maxRunAllocs       = 36
	maxInlineRunAllocs = 35
)

// TestDispatchRatio measures the dispatch ratio of issues 14 and 35 as
// interleaved rounds: each round times the baseline and the Handler's two
// paths (the tool on a goroutine of its own, and a tool marked WithInline
// on the caller's), back to back, each side in each place of the round in
// turn, so that the load of a shared machine falls on all alike. It logs
// the median and range of the per-round ratios, by wall time and by the
// process's CPU time, and the allocations of each side. Beside them it
// times the baseline with the tool's function run on a goroutine of its
// own: the least that handing a call off adds, whatever the Handler does.
// It runs only when LODE_BENCH_ROUNDS gives the number of rounds;
// LODE_BENCH_ROUND_MS sizes a round (the baseline's time in it, 40 ms
// unless set):
//
//	LODE_BENCH_ROUNDS=101 go test -run TestDispatchRatio -v ./x/tool
func TestDispatchRatio(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("LODE_BENCH_ROUNDS"))
	if rounds <= 0 {
		t.Skip("set LODE_BENCH_ROUNDS to measure")
	}
	sides := []struct {
		name string
		f    func()
	}{
		{"baseline", addBaseline(t)},
		{"handler, goroutine", addDispatch(t)},
		{"handler, inline", addDispatchInline(t)},
		{"baseline, function on a goroutine", addBaselineHandedOff(t)},
	}
	type sample struct{ wall, cpu time.Duration }
	// No side starts from a collected heap: one that did would be spared
	// the collection its allocations bring, as a side allocating less than
	// the smallest heap goal in a round would be spared it every round.
	// Rounds long enough for several collections spread them over the
	// sides as their allocations do.
	timeN := func(f func(), n int) sample {
		c, w := cpuTime(), time.Now()
		for range n {
			f()
		}
		return sample{time.Since(w), cpuTime() - c}
	}
	// Size a round so that the baseline runs for about
	// LODE_BENCH_ROUND_MS milliseconds (40 unless set): long enough for a
	// few collections in every side.
	roundMS, _ := strconv.Atoi(os.Getenv("LODE_BENCH_ROUND_MS"))
	if roundMS <= 0 {
		roundMS = 40
	}
	n := 500
	for timeN(sides[0].f, n).wall < time.Duration(roundMS)*time.Millisecond && n < 1<<24 {
		n *= 2
	}
	wall := make([][]float64, len(sides))
	cpu := make([][]float64, len(sides))
	ns := make([][]float64, len(sides))
	got := make([]sample, len(sides))
	for r := range rounds {
		for k := range sides { // rotate the order, round by round
			i := (k + r) % len(sides)
			got[i] = timeN(sides[i].f, n)
		}
		for i := range sides {
			wall[i] = append(wall[i], float64(got[i].wall)/float64(got[0].wall))
			if got[0].cpu > 0 {
				cpu[i] = append(cpu[i], float64(got[i].cpu)/float64(got[0].cpu))
			}
			ns[i] = append(ns[i], float64(got[i].wall)/float64(n))
		}
	}
	summary := func(xs []float64) string {
		if len(xs) == 0 {
			return "not measured"
		}
		slices.Sort(xs)
		return fmt.Sprintf("median %.2f× (range %.2f–%.2f×)", xs[len(xs)/2], xs[0], xs[len(xs)-1])
	}
	t.Logf("%d rounds of %d calls, GOMAXPROCS %d", rounds, n, runtime.GOMAXPROCS(0))
	for i, sd := range sides {
		slices.Sort(ns[i])
		t.Logf("%s: %.0f ns (median), %v allocations; ÷ baseline: wall time %s, CPU time %s",
			sd.name, ns[i][rounds/2], testing.AllocsPerRun(100, sd.f), summary(wall[i]), summary(cpu[i]))
	}
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
