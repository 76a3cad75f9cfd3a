// Command eino times one agent scenario — a user message, a model turn that
// calls a typed add tool, the tool, a final answer — through lode's loop
// and through Eino's react agent (github.com/cloudwego/eino/flow/agent/react,
// pinned in this module's go.mod, used as a dependency), each framework in
// a process of its own, in interleaved rounds. The models are fakes that
// answer at once, so what is timed is each framework's own work.
//
// It lives in a module of its own so that lode's module graph never holds
// Eino. Run it from the repository with bench/eino/run.sh (idle, or loaded
// with a CPU-burning process beside it), or by hand:
//
//	go run . -compare -rounds 11           # every side, 0 and 1,000 prior turns
//	go run . -side eino -prior 1000        # one measurement, one process
//
// The sides thread, thread-inline and file run lode as users do: the tool
// registered with tool.RegisterFunc (marked Inline for thread-inline), on
// threads made by ledger.NewThread or kept by the file store. lode and
// lode-inline run it on a State written for the benchmark, which shows the
// loop's own cost.
//
// A measurement warms up, then runs the scenario for -ms milliseconds and
// prints one line of JSON: nanoseconds and allocations per run. -compare
// starts one process per measurement, rotating the order of the sides
// from round to round, and prints the medians and the per-round ratios.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

type measurement struct {
	Side  string  `json:"side"`
	Prior int     `json:"prior"`
	Runs  int     `json:"runs"`
	NsOp  float64 `json:"ns_op"`
	// CPUNsOp is the process's CPU time per run, which a machine loaded
	// by others moves less than the wall time (GC workers included).
	CPUNsOp float64 `json:"cpu_ns_op"`
	Allocs  float64 `json:"allocs_op"`
	Bytes   float64 `json:"bytes_op"`
}

func main() {
	side := flag.String("side", "", "measure one side: lode, lode-inline, thread, thread-inline, file or eino")
	prior := flag.Int("prior", 0, "prior turns in the history")
	ms := flag.Int("ms", 300, "milliseconds to time the scenario for")
	compare := flag.Bool("compare", false, "run every side in its own process, in interleaved rounds")
	rounds := flag.Int("rounds", 11, "rounds for -compare")
	priors := flag.String("priors", "0,1000", "prior turns for -compare, comma-separated")
	sides := flag.String("sides", "thread,thread-inline,file,lode,lode-inline,eino", "sides for -compare, comma-separated")
	burn := flag.Bool("burn", false, "burn CPU on GOMAXPROCS goroutines until killed (the load of a loaded run)")
	flag.Parse()
	switch {
	case *burn:
		burnCPU()
	case *compare:
		if err := compareSides(strings.Split(*sides, ","), *priors, *rounds, *ms); err != nil {
			fmt.Fprintln(os.Stderr, "eino:", err)
			os.Exit(1)
		}
	case *side != "":
		m, err := measure(*side, *prior, time.Duration(*ms)*time.Millisecond)
		if err != nil {
			fmt.Fprintln(os.Stderr, "eino:", err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(m)
	default:
		flag.Usage()
		os.Exit(2)
	}
}

// measure runs one side's scenario, checks its answer, warms it up and
// times it for about d.
func measure(side string, prior int, d time.Duration) (measurement, error) {
	mk, ok := frameworks[side]
	if !ok {
		return measurement{}, fmt.Errorf("no side %q", side)
	}
	dir, err := os.MkdirTemp("", "lode-bench-eino-")
	if err != nil {
		return measurement{}, err
	}
	defer os.RemoveAll(dir)
	run, err := mk(prior, dir)
	if err != nil {
		return measurement{}, err
	}
	ctx := context.Background()
	once := func() error {
		got, err := run(ctx)
		if err != nil {
			return err
		}
		if got != wantAnswer {
			return fmt.Errorf("%s answered %q, want %q", side, got, wantAnswer)
		}
		return nil
	}
	// Warm up for a fifth of the time (Eino compiles its graph on the
	// first run), then count the runs that fit in d.
	for start := time.Now(); time.Since(start) < d/5; {
		if err := once(); err != nil {
			return measurement{}, err
		}
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	runs, start, cpu := 0, time.Now(), cpuTime()
	for ; runs < 10 || time.Since(start) < d; runs++ {
		if err := once(); err != nil {
			return measurement{}, err
		}
	}
	elapsed, cpuUsed := time.Since(start), cpuTime()-cpu
	runtime.ReadMemStats(&after)
	return measurement{
		Side: side, Prior: prior, Runs: runs,
		NsOp:    float64(elapsed.Nanoseconds()) / float64(runs),
		CPUNsOp: float64(cpuUsed.Nanoseconds()) / float64(runs),
		Allocs:  float64(after.Mallocs-before.Mallocs) / float64(runs),
		Bytes:   float64(after.TotalAlloc-before.TotalAlloc) / float64(runs),
	}, nil
}

// compareSides runs each side at each prior in a process of its own, the
// sides' order rotating from round to round so that a change in the
// machine's load falls on each alike, and prints the medians and the
// ratios of each round.
func compareSides(sides []string, priorList string, rounds, ms int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var priors []int
	for _, p := range strings.Split(priorList, ",") {
		var n int
		if _, err := fmt.Sscan(p, &n); err != nil {
			return fmt.Errorf("-priors: %w", err)
		}
		priors = append(priors, n)
	}
	got := map[string][]measurement{} // by side/prior
	key := func(side string, prior int) string { return fmt.Sprintf("%s/%d", side, prior) }
	for r := range rounds {
		for _, prior := range priors {
			for k := range sides {
				side := sides[(k+r)%len(sides)]
				cmd := exec.Command(self, "-side", side, "-prior", fmt.Sprint(prior), "-ms", fmt.Sprint(ms))
				cmd.Stderr = os.Stderr
				out, err := cmd.Output()
				if err != nil {
					return fmt.Errorf("%s, %d prior turns: %w", side, prior, err)
				}
				var m measurement
				if err := json.Unmarshal(bytes.TrimSpace(out), &m); err != nil {
					return fmt.Errorf("%s: %w (%q)", side, err, out)
				}
				got[key(side, prior)] = append(got[key(side, prior)], m)
			}
		}
	}
	fmt.Printf("%d rounds, each side its own process, GOMAXPROCS %s, %s\n", rounds, envOr("GOMAXPROCS", fmt.Sprint(runtime.NumCPU())), runtime.Version())
	fmt.Println("| side | prior turns | µs per run, median (range) | CPU µs per run, median | allocs | bytes | eino ÷ side by wall time, median (range) | by CPU time, median (range) |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, prior := range priors {
		eino := got[key("eino", prior)]
		for _, side := range sides {
			ms := got[key(side, prior)]
			var ns, cpu, ratio, cpuRatio []float64
			for i, m := range ms {
				ns = append(ns, m.NsOp/1000)
				cpu = append(cpu, m.CPUNsOp/1000)
				if len(eino) == len(ms) {
					ratio = append(ratio, eino[i].NsOp/m.NsOp)
					if m.CPUNsOp > 0 {
						cpuRatio = append(cpuRatio, eino[i].CPUNsOp/m.CPUNsOp)
					}
				}
			}
			ratioText, cpuText := "—", "—"
			if side != "eino" && len(ratio) > 0 {
				ratioText = summary(ratio, "×")
			}
			if side != "eino" && len(cpuRatio) > 0 {
				cpuText = summary(cpuRatio, "×")
			}
			fmt.Printf("| %s | %d | %s | %.2f | %.0f | %.0f | %s | %s |\n", side, prior, summary(ns, ""), median(cpu), median(allocs(ms)), median(bytesOf(ms)), ratioText, cpuText)
		}
	}
	return nil
}

func allocs(ms []measurement) (xs []float64) {
	for _, m := range ms {
		xs = append(xs, m.Allocs)
	}
	return xs
}

func bytesOf(ms []measurement) (xs []float64) {
	for _, m := range ms {
		xs = append(xs, m.Bytes)
	}
	return xs
}

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func summary(xs []float64, unit string) string {
	xs = slices.Clone(xs)
	sort.Float64s(xs)
	return fmt.Sprintf("%.2f%s (%.2f–%.2f%s)", xs[len(xs)/2], unit, xs[0], xs[len(xs)-1], unit)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// burnCPU keeps every P busy until the process is killed.
func burnCPU() {
	for range runtime.GOMAXPROCS(0) - 1 {
		go spin()
	}
	spin()
}

var sink uint64

func spin() {
	x := uint64(1)
	for {
		for range 1 << 20 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink = x
	}
}
