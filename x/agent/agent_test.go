package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// parentRun runs a top-level loop over reg with prov on a thread asking
// task, and returns the thread and the tool results it got.
func parentRun(t *testing.T, ctx context.Context, reg tool.Registry, filter xtool.ToolFilter, prov provider.Provider, tracer trace.Tracer, task string) (*ledger.Thread, []artifact.ToolResult) {
	t.Helper()
	var hopts []xtool.HandlerOption
	opts := []loop.Option{loop.WithInvokeOptions(xtool.WithFilteredTools(reg, filter))}
	if tracer != nil {
		hopts = append(hopts, xtool.WithTracer(tracer))
		opts = append(opts, loop.WithTracer(tracer))
	}
	opts = append(opts, loop.WithHandlers(xtool.NewHandler(reg, hopts...)))
	th := ledger.NewThread(ledger.WithID("top"))
	if err := th.Append(ledger.RoleUser, artifact.Text{Content: task}); err != nil {
		t.Fatal(err)
	}
	if _, err := loop.New(opts...).Run(ctx, th, prov); err != nil {
		t.Fatalf("parent run: %v", err)
	}
	return th, results(th)
}

func results(st ledger.State) []artifact.ToolResult {
	var out []artifact.ToolResult
	for _, turn := range st.Turns() {
		for _, a := range turn.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

func mustNew(t *testing.T, name string, opts ...agent.Option) *agent.Agent {
	t.Helper()
	a, err := agent.New(name, "the "+name+" agent", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustRegister(t *testing.T, reg tool.Registry, a *agent.Agent) {
	t.Helper()
	if err := agent.Register(reg, a); err != nil {
		t.Fatal(err)
	}
}

// storedThreads lists the store's threads by agent name.
func storedThreads(t *testing.T, store ledger.Store) map[string]ledger.ThreadInfo {
	t.Helper()
	out := map[string]ledger.ThreadInfo{}
	for info, err := range store.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out[info.Metadata[agent.MetaAgent]] = info
	}
	return out
}

// lastResult returns what the model was shown of the last tool result in
// req.
func lastResult(req *provider.Request) string {
	turn := req.Turns[len(req.Turns)-1]
	return turn.Artifacts[len(turn.Artifacts)-1].(artifact.ToolResult).Content
}

// echoResult answers with the text of the last tool result, prefixed.
func echoResult(prefix string) script.Step {
	return script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
		return []artifact.Artifact{artifact.Text{Content: prefix + lastResult(req)}}, nil
	})
}

type wordsIn struct {
	Text string `json:"text"`
}

// A three-level tree on the scripted provider: the top loop calls a
// researcher, which calls a summariser, which calls a plain tool. Each
// child thread is stored and linked to its parent's thread and call, and
// each level's spans nest under the execute_tool span that started it.
func TestThreeLevelTree(t *testing.T) {
	ctx := context.Background()
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("test")

	sumReg := tool.NewRegistry()
	if err := tool.RegisterFunc(sumReg, "count_words", "Count words", func(_ context.Context, in wordsIn) (int, error) {
		return len(strings.Fields(in.Text)), nil
	}); err != nil {
		t.Fatal(err)
	}
	summariser := mustNew(t, "summarise",
		agent.WithProvider(script.Play(
			script.Call("s1", "count_words", `{"text":"go is fun"}`),
			echoResult("3 words: "),
		)),
		agent.WithRegistry(sumReg), agent.WithStore(store), agent.WithTracer(tracer),
		agent.WithSystemPrompt("Summarise."))
	resReg := tool.NewRegistry()
	mustRegister(t, resReg, summariser)
	researcher := mustNew(t, "research",
		agent.WithProvider(script.Play(
			script.Call("r1", "summarise", `{"task":"summarise: go is fun"}`),
			echoResult("found: "),
		)),
		agent.WithRegistry(resReg), agent.WithStore(store), agent.WithTracer(tracer))
	topReg := tool.NewRegistry()
	mustRegister(t, topReg, researcher)

	top, res := parentRun(t, ctx, topReg, nil, script.Play(
		script.Call("c1", "research", `{"task":"look into go"}`),
		echoResult("done: "),
	), tracer, "research go")

	if len(res) != 1 || res[0].IsError || res[0].Content != "found: 3 words: 3" {
		t.Fatalf("top results: %+v", res)
	}
	if got := lastText(top); got != "done: found: 3 words: 3" {
		t.Errorf("top answer %q", got)
	}

	threads := storedThreads(t, store)
	r, s := threads["research"], threads["summarise"]
	if len(threads) != 2 || r.ID == "" || s.ID == "" {
		t.Fatalf("stored threads: %+v", threads)
	}
	wantMeta := map[string]map[string]string{
		"research":  {agent.MetaDepth: "1", agent.MetaParentThread: "top", agent.MetaParentCall: "c1"},
		"summarise": {agent.MetaDepth: "2", agent.MetaParentThread: r.ID, agent.MetaParentCall: "r1"},
	}
	for name, want := range wantMeta {
		for k, v := range want {
			if got := threads[name].Metadata[k]; got != v {
				t.Errorf("%s thread %s = %q, want %q", name, k, got, v)
			}
		}
	}
	if got, _ := top.Metadata(agent.MetaChildPrefix + "c1"); got != r.ID {
		t.Errorf("top links child %q, want %q", got, r.ID)
	}
	rt, err := store.Load(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if got, _ := rt.Metadata(agent.MetaChildPrefix + "r1"); got != s.ID {
		t.Errorf("research links child %q, want %q", got, s.ID)
	}
	st, err := store.Load(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var roles []string
	for _, turn := range st.Turns() {
		roles = append(roles, string(turn.Role))
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,assistant" {
		t.Errorf("summariser thread roles %s", got)
	}

	// Spans: each child's invoke_agent is a child of the execute_tool span
	// that called it, down to the grandchild's own tool.
	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, sp := range spans {
		byID[sp.SpanContext().SpanID()] = sp
	}
	path := func(name string) string {
		for _, sp := range spans {
			if sp.Name() != name {
				continue
			}
			var chain []string
			for p := sp; p != nil; p = byID[p.Parent().SpanID()] {
				chain = append(chain, p.Name())
			}
			return strings.Join(chain, " < ")
		}
		return "no span " + name
	}
	want := "execute_tool count_words < lode.turn < invoke_agent lode < execute_tool summarise < lode.turn < invoke_agent lode < execute_tool research < lode.turn < invoke_agent lode"
	if got := path("execute_tool count_words"); got != want {
		t.Errorf("span path\n got %s\nwant %s", got, want)
	}
	for _, sp := range spans {
		if sp.Name() != "execute_tool research" {
			continue
		}
		attrs := map[string]string{}
		for _, kv := range sp.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if attrs["lode.agent.thread.id"] != r.ID || attrs["lode.agent.depth"] != "1" {
			t.Errorf("execute_tool research attributes %v", attrs)
		}
	}
	if n := len(spans); n != 12 {
		t.Errorf("%d spans, want 12 (3 runs, 6 turns, 3 tool calls)", n)
	}
}

func lastText(st ledger.State) string {
	turns := st.Turns()
	return turns[len(turns)-1].Artifacts[0].(artifact.Text).Content
}

// An agent that mounts itself calls itself until the depth limit refuses,
// and the refusal comes back as data each level can answer.
func TestRecursionStoppedByDepth(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxDepth int
		levels   int
	}{
		{"default", 0, agent.DefaultMaxDepth},
		{"one", 1, 1},
		{"five", 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Every level calls itself; the deepest is refused, then each
			// level answers with what it got, innermost first.
			var steps []script.Step
			for range tc.levels + 1 {
				steps = append(steps, script.Call("x", "helper", `{"task":"again"}`))
			}
			for range tc.levels + 1 {
				steps = append(steps, echoResult("<"))
			}
			prov := script.Play(steps...)
			reg := tool.NewRegistry()
			var (
				mu       sync.Mutex
				outcomes []*agent.Outcome
			)
			obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
				mu.Lock()
				defer mu.Unlock()
				if tc, ok := ev.(loop.TurnCompleteEvent); ok {
					for _, a := range tc.Artifacts {
						if r, ok := a.(artifact.ToolResult); ok {
							if o, ok := agent.OutcomeOf(r); ok && o.Err != nil {
								outcomes = append(outcomes, o)
							}
						}
					}
				}
			})
			helper := mustNew(t, "helper", agent.WithProvider(prov), agent.WithRegistry(reg),
				agent.WithMaxDepth(tc.maxDepth), agent.WithLoopOptions(loop.WithObserver(obs)))
			mustRegister(t, reg, helper)

			_, res := parentRun(t, context.Background(), reg, nil, prov, nil, "go")
			refusal := "the agent helper was not started: agents are already nested " + itoa(tc.levels) +
				" deep here, the most allowed. Do this part yourself, with the tools you have."
			want := strings.Repeat("<", tc.levels) + refusal
			if len(res) != 1 || res[0].IsError || res[0].Content != want {
				t.Fatalf("top result %+v\nwant %q", res, want)
			}
			if prov.Remaining() != 0 {
				t.Errorf("%d steps left", prov.Remaining())
			}
			if err := helper.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(outcomes) != 1 || !errors.Is(outcomes[0].Err, agent.ErrDepth) || outcomes[0].Depth != tc.levels+1 || outcomes[0].Thread != "" {
				t.Errorf("failed outcomes %+v", outcomes)
			}
		})
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

// Two calls to one agent in one answer run concurrently, each on its own
// thread linked to its own call.
func TestParallelCallsGetTheirOwnThreads(t *testing.T) {
	echo := script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
		task := req.Turns[len(req.Turns)-1].Artifacts[0].(artifact.Text).Content
		return []artifact.Artifact{artifact.Text{Content: "did " + task}}, nil
	})
	reg := tool.NewRegistry()
	mustRegister(t, reg, mustNew(t, "w", agent.WithProvider(script.Play(echo, echo))))
	top, res := parentRun(t, context.Background(), reg, nil, script.Play(
		script.Reply(artifact.ToolCall{ID: "a", Name: "w", Arguments: `{"task":"a"}`},
			artifact.ToolCall{ID: "b", Name: "w", Arguments: `{"task":"b"}`}),
		script.Text("ok")), nil, "both")
	if len(res) != 2 || res[0].Content != "did a" || res[1].Content != "did b" {
		t.Fatalf("results %+v", res)
	}
	ida, _ := top.Metadata(agent.MetaChildPrefix + "a")
	idb, _ := top.Metadata(agent.MetaChildPrefix + "b")
	if ida == "" || idb == "" || ida == idb {
		t.Errorf("child links %q, %q", ida, idb)
	}
}
