package history_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/internal/allstores"
	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestNewOptions(t *testing.T) {
	cases := []struct {
		name string
		opts []history.Option
		want string // error text; empty for success
		budg int
	}{
		{"budget", []history.Option{history.WithBudget(500)}, "", 500},
		{"model from the table", []history.Option{history.WithModel("gpt-4o-mini")}, "", 128000 - history.DefaultReserve},
		{"model behind a router prefix", []history.Option{history.WithModel("acme-gateway/gpt-4"), history.WithReserve(192)}, "", 8000},
		{"a provider's prefix names the provider's own model", []history.Option{history.WithModel("openai/gpt-4"), history.WithReserve(192)}, "", 8000},
		{"exact name before a prefix", []history.Option{history.WithModel("o1-mini")}, "", 128000 - history.DefaultReserve},
		{"a local model family", []history.Option{history.WithModel("llama3.1:8b")}, "", 131072 - history.DefaultReserve},
		{"windower wins", []history.Option{history.WithModel("gpt-4o"), history.WithWindower(windower(10000))}, "", 10000 - history.DefaultReserve},
		{"a provider without windows", []history.Option{history.WithModel("gpt-4o"), history.WithWindower(script.Play())}, "", 128000 - history.DefaultReserve},
		{"no budget", nil, "history: invalid option: no budget: set WithBudget, or WithModel with a model whose context window is known", 0},
		{"unknown model", []history.Option{history.WithModel("mine-7b")}, `history: invalid option: no budget: the context window of model "mine-7b" is not known; set WithBudget`, 0},
		{"reserve eats the window", []history.Option{history.WithModel("gpt-4"), history.WithReserve(8192)}, `history: invalid option: model "gpt-4" has a window of 8192 tokens, no more than the reserve of 8192: lower WithReserve or set WithBudget`, 0},
		{"negatives", []history.Option{history.WithBudget(-1), history.WithReserve(-2), history.WithKeep(-3), history.WithResultBytes(-4)},
			"history: invalid option: budget -1 is negative: give a number of tokens, or 0 for the model's window\n" +
				"history: invalid option: reserve -2 is negative: give a number of tokens, or 0 for 4096\n" +
				"history: invalid option: keep -3 is negative: give a number of turns, or 0 for 4\n" +
				"history: invalid option: result bytes -4 is negative: give a number of bytes, or 0 for 256", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := history.New(c.opts...)
			if c.want != "" {
				if err == nil || err.Error() != c.want || !errors.Is(err, history.ErrOption) {
					t.Fatalf("err = %v, want %q wrapping ErrOption", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Budget() != c.budg {
				t.Fatalf("budget = %d, want %d", p.Budget(), c.budg)
			}
		})
	}
}

type windower int

func (w windower) ContextWindow(string) (int, bool) { return int(w), true }

func text(role ledger.Role, s string) ledger.Turn {
	return ledger.Turn{Role: role, Artifacts: []artifact.Artifact{artifact.Text{Content: s}}}
}

func TestViewShortensBeforeDropping(t *testing.T) {
	big := strings.Repeat("x", 400)
	turns := []ledger.Turn{
		text(ledger.RoleSystem, "be brief"),
		text(ledger.RoleUser, "first question"),
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: "1", Name: "get"}}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "1", Name: "get", Content: big}}},
		text(ledger.RoleAssistant, "done"),
		text(ledger.RoleUser, "next"),
	}
	whole := history.Estimate(turns)
	cases := []struct {
		name   string
		budget int
		roles  string
		cut    bool
	}{
		{"fits", whole, "system,user,assistant,tool,assistant,user", false},
		{"old result shortened", whole - 10, "system,user,assistant,tool,assistant,user", true},
		{"call and result dropped together", 40, "system,user,assistant,user", false},
		{"newest turn kept whatever the budget", 1, "system,user,user", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := history.New(history.WithBudget(c.budget), history.WithKeep(2), history.WithResultBytes(16))
			if err != nil {
				t.Fatal(err)
			}
			v := p.View(turns)
			if got := roleList(v); got != c.roles {
				t.Fatalf("roles = %s, want %s", got, c.roles)
			}
			if c.cut {
				r := v[3].Artifacts[0].(artifact.ToolResult)
				if !strings.HasPrefix(r.Content, strings.Repeat("x", 16)+"\n[… 384 more bytes") {
					t.Fatalf("shortened result = %q", r.Content)
				}
				if turns[3].Artifacts[0].(artifact.ToolResult).Content != big {
					t.Fatal("the ledger's turn was changed")
				}
			}
		})
	}
}

func roleList(ts []ledger.Turn) string {
	var s []string
	for _, t := range ts {
		s = append(s, string(t.Role))
	}
	return strings.Join(s, ",")
}

// checkPairs fails unless every call in view has its result in the tool
// turns right after it, and every result follows its call.
func checkPairs(t *testing.T, view []ledger.Turn) {
	t.Helper()
	open := map[string]bool{}
	for i, tu := range view {
		if tu.Role != ledger.RoleTool && len(open) > 0 {
			t.Fatalf("turn %d (%s): calls %v left without results", i, tu.Role, open)
		}
		for _, a := range tu.Artifacts {
			switch a := a.(type) {
			case artifact.ToolCall:
				open[a.ID] = true
			case artifact.ToolResult:
				if !open[a.ToolCallID] {
					t.Fatalf("turn %d: result %s without its call", i, a.ToolCallID)
				}
				delete(open, a.ToolCallID)
			}
		}
	}
}

// agent answers a user turn with a tool call and a tool turn with text.
type agent struct {
	n        int
	requests []provider.Request
	lens     []int
	st       func() int
}

func (a *agent) Invoke(_ context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	a.requests = append(a.requests, *req)
	a.lens = append(a.lens, a.st())
	a.n++
	last := req.Turns[len(req.Turns)-1]
	return func(yield func(artifact.Artifact, error) bool) {
		if last.Role == ledger.RoleTool {
			yield(artifact.Text{Content: fmt.Sprintf("Answer %d: the lookup says the quick brown fox jumps over the lazy dog.", a.n)}, nil)
			return
		}
		yield(artifact.ToolCall{ID: fmt.Sprint("call", a.n), Name: "lookup", Arguments: `{"q":"fox"}`}, nil)
	}
}

var lookup = loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	if c, ok := a.(artifact.ToolCall); ok {
		e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: strings.Repeat("fox facts; ", 60)},
		}})
	}
	return nil
})

type summarizer struct{ calls int }

func (s *summarizer) Invoke(_ context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	s.calls++
	n := s.calls
	return func(yield func(artifact.Artifact, error) bool) {
		yield(artifact.Text{Content: fmt.Sprintf("summary %d: the user keeps asking about foxes", n)}, nil)
	}
}

// TestLongConversation runs 2,000 turns with tool calls under a small
// budget, with and without compaction, and checks every request, then
// reloads the thread from each store and rebuilds the same requests.
func TestLongConversation(t *testing.T) {
	const budget = 1500
	for _, compact := range []bool{false, true} {
		for name, open := range allstores.Openers(t) {
			t.Run(fmt.Sprintf("%s/compact=%v", name, compact), func(t *testing.T) {
				ctx := context.Background()
				store := open(t)
				st, err := store.Create(ctx, ledger.WithID("long"))
				if err != nil {
					t.Fatal(err)
				}
				sum := &summarizer{}
				opts := []history.Option{history.WithBudget(budget)}
				if compact {
					opts = append(opts, history.WithSummarizer(sum))
				}
				pol, err := history.New(opts...)
				if err != nil {
					t.Fatal(err)
				}
				ag := &agent{st: st.Len}
				step := loop.New(loop.WithHandlers(lookup), loop.WithInvokeOptions(pol))
				if err := st.Append(ledger.RoleSystem, artifact.Text{Content: "You answer questions about foxes."}); err != nil {
					t.Fatal(err)
				}
				for i := 0; st.Len() < 2000; i++ {
					if err := st.Append(ledger.RoleUser, artifact.Text{Content: fmt.Sprintf("question %d about foxes?", i)}); err != nil {
						t.Fatal(err)
					}
					if _, err := step.Run(ctx, st, ag); err != nil {
						t.Fatal(err)
					}
				}
				for i, req := range ag.requests {
					if n := history.Estimate(req.Turns); n > budget {
						t.Fatalf("request %d: %d tokens, over the budget of %d", i, n, budget)
					}
					if req.Turns[1].Artifacts[0].(artifact.Text).Content != "question 0 about foxes?" {
						t.Fatalf("request %d does not start with the pinned first message", i)
					}
					checkPairs(t, req.Turns)
				}
				if compact && sum.calls == 0 {
					t.Fatal("no compaction in 2,000 turns")
				}
				if compact && sum.calls > 200 {
					t.Fatalf("%d compactions: one per turn or so, not once per half budget", sum.calls)
				}
				if err := store.Close(); err != nil {
					t.Fatal(err)
				}
				again := open(t)
				defer again.Close()
				loaded, err := again.Load(ctx, "long")
				if err != nil {
					t.Fatal(err)
				}
				lt := loaded.Turns()
				for i := len(ag.requests) - 50; i < len(ag.requests); i++ {
					got := pol.View(lt[:ag.lens[i]])
					equalView(t, i, got, ag.requests[i].Turns)
				}
			})
		}
	}
}

func equalView(t *testing.T, i int, got, want []ledger.Turn) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("request %d: reloaded view has %d turns, the request had %d", i, len(got), len(want))
	}
	for k := range got {
		a, _ := ledger.Turn{Role: got[k].Role, Artifacts: got[k].Artifacts}.MarshalJSON()
		b, _ := ledger.Turn{Role: want[k].Role, Artifacts: want[k].Artifacts}.MarshalJSON()
		if string(a) != string(b) {
			t.Fatalf("request %d, turn %d:\nreloaded %s\nsent     %s", i, k, a, b)
		}
	}
}

type refusal struct{}

func (refusal) Error() string               { return "400: maximum context length exceeded" }
func (refusal) ContextLengthExceeded() bool { return true }

// TestSummarySurvivesCrash: the summary is stored before the turn's
// invocation, so a turn that dies right after it leaves a thread that
// reloads to the very request that was being sent.
func TestSummarySurvivesCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Create(ctx, ledger.WithID("crash"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		_ = st.Append(ledger.RoleUser, artifact.Text{Content: fmt.Sprintf("message %d: %s", i, strings.Repeat("words ", 30))})
		_ = st.Append(ledger.RoleAssistant, artifact.Text{Content: "noted"})
	}
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "and now?"})
	crashSum := &summarizer{}
	pol, err := history.New(history.WithBudget(600), history.WithSummarizer(crashSum))
	if err != nil {
		t.Fatal(err)
	}
	var sent []ledger.Turn
	dying := script.Play(script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
		sent = req.Turns
		return nil, errors.New("killed")
	}))
	if _, err := loop.New(loop.WithInvokeOptions(pol)).Turn(ctx, st, dying); err == nil {
		t.Fatal("the turn did not fail")
	}
	// No Close: the process is gone.
	again, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	loaded, err := again.Load(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	lt := loaded.Turns()
	last := lt[len(lt)-1]
	s, ok := last.Artifacts[0].(artifact.Summary)
	if !ok || last.Role != ledger.RoleSystem || s.First != 1 || s.Content != fmt.Sprintf("summary %d: the user keeps asking about foxes", crashSum.calls) {
		t.Fatalf("last stored turn = %+v, want the summary", last)
	}
	if len(lt) != 82 {
		t.Fatalf("%d turns stored, want the 81 written and the summary", len(lt))
	}
	equalView(t, 0, pol.View(lt), sent)
	if !strings.HasPrefix(sent[0].Artifacts[0].(artifact.Text).Content, "message 0") ||
		!strings.HasPrefix(sent[1].Artifacts[0].(artifact.Text).Content, history.SummaryPrefix) {
		t.Fatalf("request = %s; want the pinned message then the summary", roleList(sent))
	}
}

// TestContextLengthRetry: a refusal compacts once and retries once.
func TestContextLengthRetry(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		refusals int
		wantErr  string
	}{
		{"second try fits", 1, ""},
		{"still too long", 2, "history: the server refused the request as too long even after compacting it to about "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			th := ledger.NewThread(ledger.WithClock(nil))
			for i := range 10 {
				_ = th.Append(ledger.RoleUser, artifact.Text{Content: fmt.Sprintf("message %d", i)})
				_ = th.Append(ledger.RoleAssistant, artifact.Text{Content: "ok"})
			}
			_ = th.Append(ledger.RoleUser, artifact.Text{Content: "last"})
			sum := &summarizer{}
			pol, err := history.New(history.WithBudget(100000), history.WithSummarizer(sum))
			if err != nil {
				t.Fatal(err)
			}
			var steps []script.Step
			for range c.refusals {
				steps = append(steps, script.Fail(refusal{}))
			}
			steps = append(steps, script.Text("fine"))
			model := script.Play(steps...)
			_, err = loop.New(loop.WithInvokeOptions(pol)).Turn(ctx, th, pol.Provider(model))
			if sum.calls != 1 {
				t.Fatalf("%d compactions, want 1", sum.calls)
			}
			if n := len(model.Requests()); n != 2 {
				t.Fatalf("%d invocations, want 2", n)
			}
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				first, retried := model.Requests()[0].Turns, model.Requests()[1].Turns
				if !strings.HasPrefix(retried[1].Artifacts[0].(artifact.Text).Content, history.SummaryPrefix) ||
					history.Estimate(retried) > history.Estimate(first)/2 {
					t.Fatalf("retried request = %s (%d tokens, first %d); want the pinned message, the summary, then at most half the size",
						roleList(retried), history.Estimate(retried), history.Estimate(first))
				}
				return
			}
			var ce *history.ContextError
			if !errors.As(err, &ce) || !errors.Is(err, history.ErrContextLength) || !strings.Contains(err.Error(), c.wantErr) ||
				!strings.Contains(err.Error(), "lower the budget (history.budget, WithBudget)") {
				t.Fatalf("err = %v", err)
			}
			if ce.Budget != 100000 {
				t.Fatalf("ContextError = %+v", ce)
			}
		})
	}
}

func TestOtherErrorsPassThrough(t *testing.T) {
	pol, _ := history.New(history.WithBudget(1000))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
	boom := errors.New("boom")
	model := script.Play(script.Fail(boom))
	_, err := loop.New(loop.WithInvokeOptions(pol)).Turn(context.Background(), th, pol.Provider(model))
	if !errors.Is(err, boom) || errors.Is(err, history.ErrContextLength) || len(model.Requests()) != 1 {
		t.Fatalf("err = %v after %d requests", err, len(model.Requests()))
	}
}
