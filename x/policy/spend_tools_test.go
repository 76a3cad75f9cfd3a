package policy_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/catalog"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// miniPrices are gpt-4o-mini's: $0.15 per million input tokens, $0.60 per
// million output.
var miniPrices = catalog.New(catalog.Model{Name: "mini", MaxOutput: 16384, Prices: &catalog.Prices{Input: 0.15, Output: 0.6}})

// lookupIn is the arguments of each of the many tools: a schema of a few
// hundred bytes, as an MCP server's tools have.
type lookupIn struct {
	Query  string   `json:"query" jsonschema:"description=What to look for, in a few words."`
	Limit  int      `json:"limit,omitempty" jsonschema:"description=How many records to return at most (1 to 100).,minimum=1,maximum=100"`
	Fields []string `json:"fields,omitempty" jsonschema:"description=Which fields of each record to return; all when empty."`
	Since  string   `json:"since,omitempty" jsonschema:"description=Only records changed after this RFC 3339 time."`
}

// manyTools is a registry of n typed tools, tool_0000 to tool_NNNN.
func manyTools(t testing.TB, n int) tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	for i := range n {
		err := tool.RegisterFunc(reg, fmt.Sprintf("tool_%04d", i), fmt.Sprintf("Looks records up in collection %d of the archive and returns them as JSON.", i),
			func(context.Context, lookupIn) (string, error) { return "found nothing", nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// billsTheMost answers as a server that bills the most the estimate
// allows: every input token the estimate counted, and an answer as long as
// MaxTokens lets it be. It calls tool_0000 calls times, then answers.
func billsTheMost(calls int) *script.Provider {
	n := 0
	step := script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
		u := artifact.Usage{InputTokens: loop.EstimateInput(req), OutputTokens: int64(req.MaxTokens)}
		if req.MaxTokens <= 0 {
			u.OutputTokens = 16384
		}
		n++
		if n > calls {
			return []artifact.Artifact{artifact.Text{Content: "done"}, u}, nil
		}
		return []artifact.Artifact{artifact.ToolCall{ID: fmt.Sprint("c", n), Name: "tool_0000", Arguments: `{"query":"q"}`}, u}, nil
	})
	steps := make([]script.Step, calls+1)
	for i := range steps {
		steps[i] = step
	}
	return script.New(steps, script.WithModel("mini"))
}

// permutations returns every order of n items, as index lists.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// longThread is a caller's thread with some history for the history
// policy to shorten.
func longThread(meta map[string]string) *ledger.Thread {
	th := ledger.NewThread(ledger.WithMetadata(meta), ledger.WithClock(nil))
	for i := range 20 {
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: strings.Repeat(fmt.Sprintf("question %d ", i), 40)})
		_ = th.Append(ledger.RoleAssistant, artifact.Text{Content: strings.Repeat(fmt.Sprintf("answer %d ", i), 40)})
	}
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "look it up"})
	return th
}

func usdOf(th ledger.State) float64 {
	var usd float64
	for _, turn := range th.Turns() {
		for _, a := range turn.Artifacts {
			if u, ok := a.(artifact.Usage); ok {
				usd += u.CostUSD
			}
		}
	}
	return usd
}

// With 1,000 tools offered the request's tools alone cost more than the
// limits allow: whatever order the options come in, the call is refused
// before it is sent, naming the limit, and nothing is spent.
func TestSpendCountsEveryToolInAnyOrder(t *testing.T) {
	reg := manyTools(t, 1000)
	hist, err := history.New(history.WithBudget(2000))
	if err != nil {
		t.Fatal(err)
	}
	limits := []struct {
		name, doc, period string
		usd               float64
	}{
		{"usd_per_run", "roles:\n  r:\n    allow: {tools: ['*']}\n    limits: {usd_per_run: 0.005}\n", "run", 0.005},
		{"usd_per_day", "roles:\n  r:\n    allow: {tools: ['*']}\n    limits: {usd_per_day: 0.01}\n", "day", 0.01},
	}
	// Where the spend limit goes: among the Step's invoke options (in
	// each place), in Run's options, or as an Admitter.
	const (
		inStep = iota
		inRun
		asAdmitter
	)
	for _, lim := range limits {
		pol, err := policy.Parse([]byte(lim.doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, where := range []int{inStep, inRun, asAdmitter} {
			for _, perm := range permutations(4) {
				name := fmt.Sprintf("%s/%d/%v", lim.name, where, perm)
				if where != inStep && perm[0] != 3 {
					continue // the spend limit is not among the options: one order will do
				}
				t.Run(name, func(t *testing.T) {
					store, err := file.Open(t.TempDir())
					if err != nil {
						t.Fatal(err)
					}
					defer store.Close()
					enf := policy.NewEnforcer(reg, pol, policy.WithSpend(store, miniPrices, "mini"),
						policy.WithSpendClock(func() time.Time { return day1 }))
					opts := []provider.InvokeOption{
						xtool.WithFilteredTools(reg, enf.Filter()),
						provider.WithSystemPrompt("You look records up in the archive. Answer briefly."),
						hist,
						enf.SpendLimit(),
					}
					var ordered []provider.InvokeOption
					for _, i := range perm {
						if where != inStep && i == 3 {
							continue
						}
						ordered = append(ordered, opts[i])
					}
					stepOpts := []loop.Option{loop.WithPricer(miniPrices), loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(ordered...)}
					var runOpts []provider.InvokeOption
					switch where {
					case inRun:
						runOpts = append(runOpts, enf.SpendLimit())
					case asAdmitter:
						stepOpts = append(stepOpts, loop.WithAdmitters(enf.SpendLimit()))
					}
					prov := billsTheMost(1)
					th := longThread(map[string]string{policy.RolesKey: "r"})
					before := len(th.Turns())
					_, err = loop.New(stepOpts...).Run(context.Background(), th, prov, runOpts...)
					var se *policy.SpendError
					if !errors.As(err, &se) || !errors.Is(err, loop.ErrLimit) {
						t.Fatalf("err = %v, want a *policy.SpendError", err)
					}
					if se.Scope != "role r" || se.Period != lim.period || se.LimitUSD != lim.usd || se.SpentUSD != 0 {
						t.Fatalf("SpendError = %+v", se)
					}
					if n := len(prov.Requests()); n != 0 {
						t.Fatalf("the provider got %d requests, want none", n)
					}
					if n := len(th.Turns()); n != before {
						t.Fatalf("the refused run appended %d turns", n-before)
					}
					held, _, err := store.AddCounter(context.Background(), "lode.spend:2026-12-01:role:r:tenant:", 0, ledger.NoLimit)
					if err != nil || held != 0 {
						t.Fatalf("the day's counter holds %d µUSD (%v)", held, err)
					}
				})
			}
		}
	}
}

// loop.WithMaxCost counts the same whole request, whatever the order of
// the options that make it.
func TestMaxCostCountsEveryToolInAnyOrder(t *testing.T) {
	reg := manyTools(t, 1000)
	hist, err := history.New(history.WithBudget(2000))
	if err != nil {
		t.Fatal(err)
	}
	opts := []provider.InvokeOption{
		xtool.WithFilteredTools(reg, nil),
		provider.WithSystemPrompt("You look records up in the archive. Answer briefly."),
		hist,
	}
	for _, perm := range permutations(len(opts)) {
		t.Run(fmt.Sprint(perm), func(t *testing.T) {
			var ordered []provider.InvokeOption
			for _, i := range perm {
				ordered = append(ordered, opts[i])
			}
			prov := billsTheMost(1)
			step := loop.New(loop.WithPricer(miniPrices), loop.WithMaxCost(0.005), loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(ordered...))
			_, err := step.Run(context.Background(), longThread(nil), prov)
			var le *loop.LimitError
			if !errors.As(err, &le) || le.Limit != loop.LimitCost || le.UsedUSD != 0 || le.MaxUSD != 0.005 || le.NextUSD <= 0.005 {
				t.Fatalf("err = %v, want a cost limit refusing the first request", err)
			}
			if n := len(prov.Requests()); n != 0 {
				t.Fatalf("the provider got %d requests, want none", n)
			}
		})
	}
}

// With a few tools the run goes on, and what it records never passes the
// limit even when the server bills the most the estimate allows.
func TestSpendWithFewToolsStaysUnderTheLimit(t *testing.T) {
	reg := manyTools(t, 1000)
	pol, err := policy.Parse([]byte("roles:\n  r:\n    allow: {tools: ['tool_000?']}\n    limits: {usd_per_run: 0.005}\n"))
	if err != nil {
		t.Fatal(err)
	}
	enf := policy.NewEnforcer(reg, pol, policy.WithSpend(nil, miniPrices, "mini"))
	for _, order := range [][]provider.InvokeOption{
		{enf.SpendLimit(), xtool.WithFilteredTools(reg, enf.Filter())},
		{xtool.WithFilteredTools(reg, enf.Filter()), enf.SpendLimit()},
	} {
		prov := billsTheMost(5)
		th := longThread(map[string]string{policy.RolesKey: "r"})
		_, err := loop.New(loop.WithPricer(miniPrices), loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(order...)).
			Run(context.Background(), th, prov)
		if !errors.Is(err, policy.ErrSpendLimit) {
			t.Fatalf("err = %v, want the run limit after some calls", err)
		}
		reqs := prov.Requests()
		if len(reqs) == 0 || len(reqs[0].Tools) != 10 {
			t.Fatalf("%d requests, the first with %d tools", len(reqs), len(reqs[0].Tools))
		}
		if spent := usdOf(th); spent > 0.005 || spent < 0.004 {
			t.Fatalf("the run recorded $%.6f against its $0.005", spent)
		}
	}
}

// Runs on many goroutines sharing one store's counters never pass the
// day's limit together: each reserves its request's largest cost before
// sending it.
func TestSpendConcurrentRunsShareTheDay(t *testing.T) {
	reg := manyTools(t, 100)
	pol, err := policy.Parse([]byte("roles:\n  r:\n    allow: {tools: ['tool_000?']}\ntenants:\n  acme: {usd_per_day: 0.02}\n"))
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]func(t *testing.T) interface {
		ledger.Counter
		Close() error
	}{
		"file": func(t *testing.T) interface {
			ledger.Counter
			Close() error
		} {
			s, err := file.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"sqlite": func(t *testing.T) interface {
			ledger.Counter
			Close() error
		} {
			s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lode.db"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			defer store.Close()
			enf := policy.NewEnforcer(reg, pol, policy.WithSpend(store, miniPrices, "mini"),
				policy.WithSpendClock(func() time.Time { return day1 }))
			step := loop.New(loop.WithPricer(miniPrices), loop.WithHandlers(xtool.NewHandler(reg)),
				loop.WithInvokeOptions(enf.SpendLimit(), xtool.WithFilteredTools(reg, enf.Filter()), provider.WithMaxTokens(500)))
			var (
				mu       sync.Mutex
				spent    float64
				requests int
				wg       sync.WaitGroup
			)
			for range 8 {
				wg.Go(func() {
					for range 100 {
						th := callerThread(map[string]string{policy.RolesKey: "r", policy.TenantKey: "acme"}, "look it up")
						prov := billsTheMost(2)
						_, err := step.Run(context.Background(), th, prov)
						mu.Lock()
						spent += usdOf(th)
						requests += len(prov.Requests())
						mu.Unlock()
						if errors.Is(err, policy.ErrSpendLimit) {
							return
						}
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			total, _, err := store.AddCounter(context.Background(), "lode.spend:2026-12-01:tenant:acme", 0, ledger.NoLimit)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d requests spent $%.6f; the counter holds %d µUSD", requests, spent, total)
			if spent > 0.02 || total > 20_000 || float64(total) < spent*1e6-1e-6 {
				t.Fatalf("together the runs spent $%.6f (counter %d µUSD) under a $0.02 daily limit", spent, total)
			}
			if spent < 0.015 || requests < 10 {
				t.Fatalf("the runs spent only $%.6f in %d requests: the test proves nothing", spent, requests)
			}
		})
	}
}
