package policy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
)

// spendPrices: $1000 per million input tokens and $1000 per million
// output, a dollar per thousand tokens, so that small scripts spend cents.
var spendPrices = catalog.New(catalog.Model{Name: "m", MaxOutput: 200, Prices: &catalog.Prices{Input: 1000, Output: 1000}})

// honest answers as a real server does: the input it was sent (counted as
// a token per four bytes, below the policy's estimate) and an answer
// within MaxTokens. It calls a tool calls times, then answers.
func honest(calls int) *script.Provider {
	n := 0
	step := script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
		bytes := 0
		for _, t := range req.Turns {
			for _, a := range t.Artifacts {
				if x, ok := a.(artifact.Text); ok {
					bytes += len(x.Content)
				}
				if x, ok := a.(artifact.ToolResult); ok {
					bytes += len(x.Content)
				}
			}
		}
		out := int64(100)
		if req.MaxTokens > 0 {
			out = min(out, int64(req.MaxTokens))
		}
		u := artifact.Usage{InputTokens: int64(bytes / 4), OutputTokens: out}
		n++
		if n > calls {
			return []artifact.Artifact{artifact.Text{Content: "done"}, u}, nil
		}
		return []artifact.Artifact{artifact.ToolCall{ID: fmt.Sprint("c", n), Name: "look", Arguments: "{}"}, u}, nil
	})
	steps := make([]script.Step, calls+1)
	for i := range steps {
		steps[i] = step
	}
	return script.New(steps, script.WithModel("m"))
}

var echo = loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	c, ok := a.(artifact.ToolCall)
	if !ok {
		return nil
	}
	e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
		artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "seen"},
	}})
	return nil
})

func spendStep(t testing.TB, doc string, counter ledger.Counter, day time.Time, models ...string) *loop.Step {
	t.Helper()
	pol, err := policy.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if models == nil {
		models = []string{"m"}
	}
	enf := policy.NewEnforcer(tool.NewRegistry(), pol, policy.WithSpend(counter, spendPrices, models...),
		policy.WithSpendClock(func() time.Time { return day }))
	return loop.New(loop.WithHandlers(echo), loop.WithInvokeOptions(enf.SpendLimit()), loop.WithPricer(spendPrices))
}

func callerThread(meta map[string]string, prompt string) *ledger.Thread {
	th := ledger.NewThread(ledger.WithMetadata(meta), ledger.WithClock(nil))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: prompt})
	return th
}

var day1 = time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)

func TestSpendPerRun(t *testing.T) {
	step := spendStep(t, "roles:\n  viewer:\n    allow: {tools: ['*']}\n    limits: {usd_per_run: 0.25}\n", nil, day1)
	prov := honest(10)
	th := callerThread(map[string]string{policy.RolesKey: "viewer"}, "go")
	_, err := step.Run(context.Background(), th, prov)
	var se *policy.SpendError
	if !errors.As(err, &se) || !errors.Is(err, policy.ErrSpendLimit) || !errors.Is(err, loop.ErrLimit) {
		t.Fatalf("err = %v, want a SpendError", err)
	}
	if se.Scope != "role viewer" || se.Period != "run" || se.LimitUSD != 0.25 {
		t.Fatalf("SpendError = %+v", se)
	}
	var spent float64
	for _, turn := range th.Turns() {
		for _, a := range turn.Artifacts {
			if u, ok := a.(artifact.Usage); ok {
				spent += u.CostUSD
			}
		}
	}
	if spent > 0.25 {
		t.Fatalf("the run spent $%v, over its $0.25", spent)
	}
	// The last request sent was cut to what the limit could pay for.
	reqs := prov.Requests()
	if last := reqs[len(reqs)-1]; last.MaxTokens <= 0 || last.MaxTokens >= 200 {
		t.Fatalf("last request's MaxTokens = %d", last.MaxTokens)
	}
	// A new user message starts a new run.
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "again"})
	if _, err := step.Run(context.Background(), th, honest(0)); err != nil {
		t.Fatalf("a new run was refused: %v", err)
	}
}

func TestSpendPerDayTenants(t *testing.T) {
	doc := "roles:\n  viewer:\n    allow: {tools: ['*']}\ntenants:\n  '*': {usd_per_day: 0.3}\n  big: {usd_per_day: 100}\n"
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	step := spendStep(t, doc, store, day1)
	ctx := context.Background()
	run := func(tenant string, calls int) error {
		th := callerThread(map[string]string{policy.RolesKey: "viewer", policy.TenantKey: tenant}, "go")
		_, err := step.Run(ctx, th, honest(calls))
		return err
	}
	// acme's runs share the day's $0.30 however they are split.
	var err1 error
	for i := 0; i < 10 && err1 == nil; i++ {
		err1 = run("acme", 1)
	}
	var se *policy.SpendError
	if !errors.As(err1, &se) || se.Scope != "tenant acme" || se.Period != "day" || se.LimitUSD != 0.3 {
		t.Fatalf("err = %v (%+v)", err1, se)
	}
	total, _, err := store.AddCounter(ctx, "lode.spend:2026-12-01:tenant:acme", 0, ledger.NoLimit)
	if err != nil || total > 300000 {
		t.Fatalf("acme's counter = %d µUSD (%v), over $0.30", total, err)
	}
	// Another tenant has its own day; big has its own limit.
	if err := run("other", 1); err != nil {
		t.Fatalf("other: %v", err)
	}
	if err := run("big", 5); err != nil {
		t.Fatalf("big: %v", err)
	}
	// The next day starts afresh.
	next := spendStep(t, doc, store, day1.Add(24*time.Hour))
	th := callerThread(map[string]string{policy.RolesKey: "viewer", policy.TenantKey: "acme"}, "go")
	if _, err := next.Run(ctx, th, honest(1)); err != nil {
		t.Fatalf("the next day: %v", err)
	}
}

func TestSpendSetupFailsClosed(t *testing.T) {
	cases := []struct {
		name, doc string
		counter   bool
		models    []string
		want      string
	}{
		{"unpriced model", "roles:\n  r:\n    allow: {tools: ['*']}\n    limits: {usd_per_run: 1}\n", false, []string{"gpt-unknown"}, `the model "gpt-unknown" has no price`},
		{"no counters for a day", "roles:\n  r:\n    allow: {tools: ['*']}\n    limits: {usd_per_day: 1}\n", false, nil, "keeps no shared counters"},
		{"a priced and an unpriced model", "roles:\n  r:\n    allow: {tools: ['*']}\n    limits: {usd_per_run: 1}\n", false, []string{"m", "x"}, `"x" has no price`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var counter ledger.Counter
			step := spendStep(t, c.doc, counter, day1, c.models...)
			prov := honest(0)
			_, err := step.Run(context.Background(), callerThread(map[string]string{policy.RolesKey: "r"}, "go"), prov)
			if !errors.Is(err, policy.ErrSpendSetup) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if n := len(prov.Requests()); n != 0 {
				t.Fatalf("%d requests sent", n)
			}
		})
	}
	// A caller no usd_ limit binds needs nothing.
	step := spendStep(t, "roles:\n  r:\n    allow: {tools: ['*']}\n", nil, day1, "unpriced")
	if _, err := step.Run(context.Background(), callerThread(map[string]string{policy.RolesKey: "r"}, "go"), honest(0)); err != nil {
		t.Fatal(err)
	}
}

// A call that fails before anything arrived gives its reservation back at
// once; one that fails midway keeps it, since the server may bill what it
// streamed; one that answers is settled on its usage.
func TestSpendFailedCallGivesBack(t *testing.T) {
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	step := spendStep(t, "roles:\n  r:\n    allow: {tools: ['*']}\n    limits: {usd_per_day: 5}\n", store, day1)
	name := "lode.spend:2026-12-01:role:r:tenant:"
	counter := func() int64 {
		n, _, err := store.AddCounter(ctx, name, 0, ledger.NoLimit)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	th := callerThread(map[string]string{policy.RolesKey: "r"}, "go")
	failing := script.New([]script.Step{script.Fail(errors.New("server down"))}, script.WithModel("m"))
	if _, err := step.Run(ctx, th, failing); err == nil {
		t.Fatal("the failing call succeeded")
	}
	if held := counter(); held != 0 {
		t.Fatalf("a call refused before anything arrived holds %d µUSD", held)
	}
	midway := script.New([]script.Step{script.FailAfter(1, errors.New("connection reset"), artifact.Text{Content: "partial answer"})}, script.WithModel("m"))
	if _, err := step.Run(ctx, th, midway); err == nil {
		t.Fatal("the call that broke midway succeeded")
	}
	held := counter()
	if held <= 0 {
		t.Fatalf("a call that broke midway gave back its reservation")
	}
	if _, err := step.Run(ctx, th, honest(0)); err != nil {
		t.Fatal(err)
	}
	var spent float64
	for _, turn := range th.Turns() {
		for _, a := range turn.Artifacts {
			if u, ok := a.(artifact.Usage); ok {
				spent += u.CostUSD
			}
		}
	}
	if want := held + int64(spent*1e6+0.999999); counter() != want {
		t.Fatalf("counter = %d µUSD, want the broken call's %d and the answer's %d", counter(), held, want-held)
	}
}

// Two processes sharing a SQLite store and a tenant's usd_per_day limit
// run until refused, and together never pass it.
func TestSpendTwoProcessesSQLite(t *testing.T) {
	if os.Getenv("LODE_SPEND_HELPER") != "" {
		return
	}
	db := filepath.Join(t.TempDir(), "lode.db")
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Each helper says it is ready and waits for the word to start, so
	// that the two spend at the same time.
	cmds := make([]*exec.Cmd, 2)
	outs := make([]*bufio.Reader, 2)
	gos := make([]io.WriteCloser, 2)
	for i := range cmds {
		cmds[i] = exec.Command(bin, "-test.run=^TestSpendHelperProcess$", "-test.count=1", "-test.v")
		cmds[i].Env = append(os.Environ(), "LODE_SPEND_HELPER="+db)
		cmds[i].Stderr = os.Stderr
		stdout, err := cmds[i].StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = bufio.NewReader(stdout)
		if gos[i], err = cmds[i].StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range cmds {
		if line, err := outs[i].ReadString('\n'); err != nil || !strings.Contains(line, "ready") {
			for !strings.Contains(line, "ready") && err == nil {
				line, err = outs[i].ReadString('\n')
			}
			if err != nil {
				t.Fatalf("helper %d: %v", i, err)
			}
		}
	}
	for i := range cmds {
		fmt.Fprintln(gos[i], "go")
		gos[i].Close()
	}
	var spent float64
	for i, c := range cmds {
		rest, _ := io.ReadAll(outs[i])
		if err := c.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, rest)
		}
		out := string(rest)
		j := strings.Index(out, "spent=")
		if j < 0 {
			t.Fatalf("helper %d said: %s", i, out)
		}
		f, err := strconv.ParseFloat(strings.Fields(out[j+len("spent="):])[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("helper %d spent $%.6f", i, f)
		spent += f
	}
	s, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	total, _, err := s.AddCounter(context.Background(), "lode.spend:2026-12-01:tenant:acme", 0, ledger.NoLimit)
	if err != nil {
		t.Fatal(err)
	}
	// Together they use up the day, and never pass it; the counter holds
	// what they spent, rounded up to the µUSD per answer.
	// The helpers' dollars are decimal sums in floating point: compare
	// them to the µUSD counter to the half µUSD.
	if spent > 5.0 || total > 5_000_000 || spent < 4.5 || float64(total) < spent*1e6-0.5 {
		t.Fatalf("the two processes spent $%.6f (counter %d µUSD) under a $5.00 daily limit", spent, total)
	}
}

// TestSpendHelperProcess is one of TestSpendTwoProcessesSQLite's processes.
func TestSpendHelperProcess(t *testing.T) {
	db := os.Getenv("LODE_SPEND_HELPER")
	if db == "" {
		t.Skip("run by TestSpendTwoProcessesSQLite")
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	step := spendStep(t, "roles:\n  r:\n    allow: {tools: ['*']}\ntenants:\n  acme: {usd_per_day: 5}\n", s, day1)
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	var spent float64
	for i := 0; i < 1000; i++ {
		th := callerThread(map[string]string{policy.RolesKey: "r", policy.TenantKey: "acme"}, "go")
		_, err := step.Run(ctx, th, honest(1))
		for _, turn := range th.Turns() {
			for _, a := range turn.Artifacts {
				if u, ok := a.(artifact.Usage); ok {
					spent += u.CostUSD
				}
			}
		}
		if errors.Is(err, policy.ErrSpendLimit) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	fmt.Printf("spent=%.6f\n", spent)
}
