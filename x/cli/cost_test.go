package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// costServer answers a call (20 tokens in, 5 out) and then a text.
func costServer(t *testing.T) (*fakeOpenAI, string) {
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
		callReply("call_1", "calculator__eval", `{"expression":"1+1"}`),
		textReply("2."),
	}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return fake, srv.URL + "/v1"
}

const pricedTiny = "tools:\n  calculator: {}\ncatalog:\n  tiny: {input: 1000, output: 2000}\n"

func TestRunPrintsTokensAndCost(t *testing.T) {
	cases := []struct {
		name, config string
		args         []string
		code         int
		want         []string // on stderr
		requests     int
	}{
		{"priced", pricedTiny, nil, 0, []string{"(used: 20 tokens in, 5 out, $0.0300)"}, 2},
		{"per turn with --trace", pricedTiny, []string{"--trace"}, 0, []string{"(turn 1: 20 tokens in, 5 out, $0.0300)", "(used: 20 tokens in, 5 out, $0.0300)"}, 2},
		{"unpriced", "", nil, 0, []string{"(used: 20 tokens in, 5 out; no price for tiny (catalog: in lode.yaml gives one))"}, 2},
		// At $1000 per million tokens the first request (the calculator's
		// schema with it) may cost more than $0.01: refused before it is
		// sent.
		{"cost limit", pricedTiny, []string{"--max-cost", "0.01"}, 1,
			[]string{"the run was stopped at its cost limit before a request that may cost $", ": $0.0000 of $0.0100 spent (--max-cost, or max_cost in lode.yaml)"}, 0},
		{"cost limit from lode.yaml", pricedTiny + "max_cost: 0.01\n", nil, 1, []string{"the run was stopped at its cost limit"}, 0},
		{"a limit without prices", "", []string{"--max-cost", "1"}, 1,
			[]string{`loop: the model has no price, so the cost limit cannot be kept: "tiny": a cost limit needs the model's prices; give them under catalog: in lode.yaml`}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake, url := costServer(t)
			dir := writeConfig(t, c.config)
			args := append([]string{"run", "--model", "tiny"}, c.args...)
			r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": url}, "", append(args, "what is 1+1?")...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d: %s", r.code, c.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if len(fake.requests) != c.requests {
				t.Errorf("%d requests, want %d", len(fake.requests), c.requests)
			}
		})
	}
}

func TestCostConfigRefused(t *testing.T) {
	cases := []struct{ config, want string }{
		{"max_cost: -1\n", "lode.yaml:1: max_cost must be a number of US dollars, not negative (0 means no limit)"},
		{"max_cost: .nan\n", "lode.yaml:1: max_cost must be a number of US dollars"},
		{"catalog:\n  m: {input: -1}\n", "lode.yaml:2: catalog: m: input must be a price in US dollars per million tokens, not negative"},
		{"catalog:\n  m: {context: -5}\n", "lode.yaml:2: catalog: m: context and max_output must not be negative"},
		{"catalog:\n  m: {price: 1}\n", `lode.yaml:2: unknown key "price" in catalog.m:`},
		{"catalog:\n  m: 3\n", "lode.yaml:2: catalog.m must be a mapping of keys"},
		{"catalog: [a]\n", "lode.yaml:1: catalog must be a mapping of names"},
	}
	for _, c := range cases {
		dir := writeConfig(t, c.config)
		r := lode(t, dir, nil, "", "run", "--model", "m", "hi")
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q, want %q", c.config, r.code, r.stderr, c.want)
		}
	}
	r := lode(t, t.TempDir(), nil, "", "run", "--model", "m", "--max-cost", "-2", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "--max-cost -2: must be a number of US dollars, not negative") {
		t.Errorf("--max-cost -2: exit %d, %q", r.code, r.stderr)
	}
}

// lode chat ends each answer with what it took.
func TestChatPrintsTokensAndCost(t *testing.T) {
	_, url := costServer(t)
	dir := writeConfig(t, pricedTiny)
	r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": url}, "what is 1+1?\n", "chat", "--model", "tiny")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "(used: 20 tokens in, 5 out, $0.0300)") {
		t.Errorf("stderr lacks the cost line:\n%s", r.stderr)
	}
}

// lode web keeps max_cost: a request that may pass it is not sent, and
// the page's stream says why.
func TestWebKeepsTheCostLimit(t *testing.T) {
	fake, url := costServer(t)
	dir := writeConfig(t, pricedTiny+"max_cost: 0.01\n")
	lines := make(chan string, 100)
	e := env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: lineWriter{lines}, getenv: func(string) string { return "" }, interrupts: make(chan os.Signal)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	t.Chdir(dir)
	go func() {
		done <- run(ctx, e, []string{"web", "--addr", "127.0.0.1:0", "--base-url", url, "--model", "tiny", "--store", filepath.Join(dir, "threads")})
	}()
	var page string
	select {
	case l := <-lines:
		m := regexp.MustCompile(`chat at (http://\S+/)`).FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("lode web said %q", l)
		}
		page = m[1]
	case code := <-done:
		t.Fatalf("lode web exited with %d", code)
	}
	req, _ := http.NewRequest(http.MethodPost, page+"api/chat", strings.NewReader(`{"messages":[{"role":"user","parts":[{"type":"text","text":"what is 1+1?"}]}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "cost limit") {
		t.Errorf("the stream does not say the cost limit stopped it:\n%s", body)
	}
	fake.mu.Lock()
	n := len(fake.requests)
	fake.mu.Unlock()
	if n != 0 {
		t.Errorf("%d model requests, want none: the first may cost more than the limit", n)
	}
	cancel()
	<-done
}

// The policy's usd_ limits at lode run: a day's limit needs the ledger
// folder for its counters, and a used-up limit says which.
func TestRunKeepsThePolicySpendLimits(t *testing.T) {
	policy := "policy:\n  roles:\n    viewer:\n      allow: {packs: [calculator]}\n      limits: {usd_per_day: %s}\n"
	cases := []struct {
		name, limit string
		store       bool
		want        string
		requests    int
	}{
		{"no store for the day's counters", "1", false,
			"a usd_per_day limit counts the day's spending in the ledger folder; give one with --store or store: in lode.yaml", 0},
		// At $1000 per million tokens the request alone costs more than
		// the day allows: refused before it is sent.
		{"a day that cannot pay for the request", "0.04", true,
			"the run was stopped by the policy: role viewer has spent $0.0000 of its $0.0400 per day", 0},
		{"inside the day's limit", "5", true, "", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake, url := costServer(t)
			dir := writeConfig(t, pricedTiny+strings.ReplaceAll(policy, "%s", c.limit))
			args := []string{"run", "--model", "tiny", "--role", "viewer"}
			if c.store {
				args = append(args, "--store", filepath.Join(dir, "threads"))
			}
			r := lode(t, dir, map[string]string{"OPENAI_BASE_URL": url}, "", append(args, "what is 1+1?")...)
			if c.want == "" {
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
			} else if r.code != 1 || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, stderr %q, want %q", r.code, r.stderr, c.want)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if len(fake.requests) != c.requests {
				t.Errorf("%d requests, want %d", len(fake.requests), c.requests)
			}
		})
	}
}

// The usage of a call made for a turn outside the thread (a history
// summary, loop.UsageEvent) counts in what the run spent, and --trace
// prints it on a line of its own.
func TestPrinterCountsUsageEvents(t *testing.T) {
	for _, perTurn := range []bool{false, true} {
		var info strings.Builder
		p := &printer{out: io.Discard, info: &info, perTurn: perTurn}
		ctx := context.Background()
		p.Emit(ctx, loop.UsageEvent{For: "history summary", Usage: artifact.Usage{InputTokens: 900, OutputTokens: 100, Model: "tiny", CostUSD: 0.5, Priced: true}})
		p.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
			artifact.Text{Content: "2."}, artifact.Usage{InputTokens: 20, OutputTokens: 5, Model: "tiny", CostUSD: 0.03, Priced: true}}})
		p.summary()
		want := []string{"(used: 920 tokens in, 105 out, $0.5300)"}
		if perTurn {
			want = append(want, "(history summary: 900 tokens in, 100 out, $0.5000)", "(turn 1: 20 tokens in, 5 out, $0.0300)")
		}
		for _, w := range want {
			if !strings.Contains(info.String(), w) {
				t.Errorf("--trace %v: printed\n%s\nwant %q", perTurn, info.String(), w)
			}
		}
	}
}

// lode web prices its answers with the catalog, as run and chat do: the
// answer's message metadata carries what run prints, or names the model
// that has no price.
func TestWebStreamsTokensAndCost(t *testing.T) {
	cases := []struct{ name, config, want string }{
		{"priced", "catalog:\n  m: {input: 1000, output: 2000}\n",
			`{"messageMetadata":{"usage":{"inputTokens":20,"cachedInputTokens":0,"outputTokens":5,"reasoningTokens":0,"costUSD":0.03}},"type":"message-metadata"}`},
		{"unpriced", "",
			`{"messageMetadata":{"usage":{"inputTokens":20,"cachedInputTokens":0,"outputTokens":5,"reasoningTokens":0,"costUSD":0,"unpriced":"m"}},"type":"message-metadata"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){
				callReply("call_1", "calculator__eval", `{"expression":"1+1"}`),
				textReply("2."),
			}}
			page, _, stop := startWeb(t, writeConfig(t, c.config), fake, "--store", filepath.Join(t.TempDir(), "threads"))
			defer stop()
			req, _ := http.NewRequest(http.MethodPost, page+"api/chat", strings.NewReader(`{"messages":[{"role":"user","parts":[{"type":"text","text":"what is 1+1?"}]}]}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var last string
			for _, l := range strings.Split(string(body), "\n") {
				if strings.Contains(l, `"type":"message-metadata"`) {
					last = strings.TrimPrefix(l, "data: ")
				}
			}
			if last != c.want {
				t.Errorf("the answer's last metadata is\n %s\nwant\n %s\nin\n%s", last, c.want, body)
			}
		})
	}
}
