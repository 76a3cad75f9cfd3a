package a2a_test

import (
	"context"
	"errors"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// run runs one loop in which the model calls name with args, then says
// "done"; it returns the thread and the run's error.
func run(t *testing.T, reg tool.Registry, st ledger.State, name, args string, hopts []xtool.HandlerOption, lopts ...loop.Option) (ledger.State, error) {
	t.Helper()
	if st == nil {
		st = ledger.NewThread()
	}
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "go"})
	var filter xtool.ToolFilter
	step := loop.New(append([]loop.Option{loop.WithHandlers(xtool.NewHandler(reg, hopts...)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, filter))}, lopts...)...)
	prov := script.Play(script.Call("call_1", name, args), script.Text("done"))
	_, err := step.Run(context.Background(), st, prov)
	return st, err
}

// resultOf is the first tool result of st.
func resultOf(t *testing.T, st ledger.State) artifact.ToolResult {
	t.Helper()
	for _, turn := range st.Turns() {
		for _, a := range turn.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok {
				return r
			}
		}
	}
	t.Fatal("no tool result")
	return artifact.ToolResult{}
}

func mount(t *testing.T, url string, opts ...lodea2a.RemoteOption) (tool.Registry, *lodea2a.Remote) {
	t.Helper()
	reg := tool.NewRegistry()
	r, err := lodea2a.Mount(context.Background(), reg, url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return reg, r
}

func TestMountNamesSkills(t *testing.T) {
	url, _ := goServer(t, &goAgent{exec: answer("a", "b", nil)}, true, nil)
	reg, r := mount(t, url)
	if r.Name() != "echo_agent" {
		t.Errorf("name %q", r.Name())
	}
	var names []string
	for _, tl := range reg.Tools() {
		names = append(names, tl.Name)
		if !tl.Hints.Untrusted || !tl.Hints.Destructive || !tl.Hints.OpenWorld || tl.Hints.ReadOnly {
			t.Errorf("%s hints %+v", tl.Name, tl.Hints)
		}
	}
	if got := strings.Join(names, ","); got != "echo_agent__summarise,echo_agent__translate" {
		t.Errorf("tools %s", got)
	}
	b, _ := reg.Lookup("echo_agent__summarise")
	if !strings.Contains(b.Tool.Description, `remote agent "Echo Agent"`) || !strings.Contains(b.Tool.Description, "Summarise this mail") {
		t.Errorf("description %q", b.Tool.Description)
	}

	reg2, _ := mount(t, url, lodea2a.WithName("helper"), lodea2a.WithReadOnly(), lodea2a.WithLabels(lodea2a.Labels{TrustOutput: true, SendsOut: true}))
	b, ok := reg2.Lookup("helper__translate")
	if !ok {
		t.Fatal("helper__translate not mounted")
	}
	if h := b.Tool.Hints; h.Untrusted || h.Destructive || !h.ReadOnly || !h.SendsOut {
		t.Errorf("hints %+v", h)
	}
}

func TestCallStreamsAndLabelsUntrusted(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		name := map[bool]string{true: "streaming", false: "blocking"}[streaming]
		t.Run(name, func(t *testing.T) {
			g := &goAgent{exec: answer("Hel", "lo", nil)}
			url, s := goServer(t, g, streaming, nil)
			reg, _ := mount(t, url, lodea2a.WithReadOnly(), lodea2a.WithBearerToken("s3cret"))
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			st := ledger.NewThread(ledger.WithMetadata(map[string]string{auth.UserKey: "ana", auth.TenantKey: "acme", auth.RolesKey: "analyst"}))
			st2, err := run(t, reg, st, "echo_agent__summarise", `{"task":"summarise the mail"}`, []xtool.HandlerOption{xtool.WithTracer(tp.Tracer("t"))})
			if err != nil {
				t.Fatal(err)
			}
			r := resultOf(t, st2)
			if r.IsError || r.Content != "Hello" {
				t.Fatalf("result %+v", r)
			}
			if _, ok := ledger.HasLabel(st2, ledger.LabelUntrusted); !ok {
				t.Error("thread not labelled untrusted")
			}
			if g.runs.Load() != 1 {
				t.Errorf("runs %d", g.runs.Load())
			}
			// The trace crossed: the remote saw the execute_tool span's
			// trace ID in traceparent.
			var traceID string
			for _, sp := range exp.GetSpans() {
				if strings.HasPrefix(sp.Name, "execute_tool") {
					traceID = sp.SpanContext.TraceID().String()
				}
			}
			tps := s.headers("traceparent")
			if traceID == "" || !strings.Contains(tps[len(tps)-1], traceID) {
				t.Errorf("traceparent %q, trace %s", tps, traceID)
			}
			for _, a := range s.headers("Authorization") {
				if a != "Bearer s3cret" {
					t.Errorf("authorization %q", a)
				}
			}
			body := s.allBodies()
			for _, want := range []string{`"lode/skill":"summarise"`, `"lode/caller":{`, `"user":"ana"`, `"tenant":"acme"`, `"roles":["analyst"]`, `"messageId":"lode-call_1-1"`, `"id":"lode-1"`} {
				if !strings.Contains(body, want) {
					t.Errorf("request lacks %s: %s", want, body)
				}
			}
		})
	}
}

func TestInputRequired(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		name := map[bool]string{true: "streaming", false: "blocking"}[streaming]
		t.Run(name, func(t *testing.T) {
			var replies []string
			g := &goAgent{exec: func(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
				return func(yield func(a2a.Event, error) bool) {
					if ec.StoredTask == nil {
						if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
							return
						}
						q := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("Which language?"))
						yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, q), nil)
						return
					}
					replies = append(replies, textOf(ec.Message))
					yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("Bonjour"))), nil)
				}
			}}
			url, _ := goServer(t, g, streaming, nil)
			_, r := mount(t, url)
			ctx := context.Background()
			v, err := r.Call(ctx, "translate", map[string]any{"task": "translate hello"})
			if err != nil {
				t.Fatal(err)
			}
			res := v.(tool.Result)
			ans := res.Value.(*lodea2a.Answer)
			if res.IsError || ans.State != string(a2a.TaskStateInputRequired) || ans.TaskID == "" || ans.ContextID == "" {
				t.Fatalf("result %+v %+v", res, ans)
			}
			for _, want := range []string{"needs more before it can go on", "Which language?", "echo_agent__translate", `task_id "` + ans.TaskID + `"`, `context_id "` + ans.ContextID + `"`} {
				if !strings.Contains(res.Content, want) {
					t.Errorf("content lacks %q: %s", want, res.Content)
				}
			}
			v, err = r.Call(ctx, "translate", map[string]any{"task": "French", "task_id": ans.TaskID, "context_id": ans.ContextID})
			if err != nil {
				t.Fatal(err)
			}
			res = v.(tool.Result)
			if res.IsError || res.Content != "Bonjour" || len(replies) != 1 || replies[0] != "French" {
				t.Fatalf("second result %+v, replies %q", res, replies)
			}
		})
	}
}

func TestCancelledTurnCancelsTheTask(t *testing.T) {
	g := &goAgent{exec: hang(nil)}
	url, _ := goServer(t, g, true, nil)
	// The turn is cancelled once lode has read that the task works.
	ctx, cancel := context.WithCancel(context.Background())
	hc := &httpClientWatch{word: "TASK_STATE_WORKING", seen: cancel}
	_, r := mount(t, url, lodea2a.WithHTTPClient(hc.client()))
	_, err := r.Call(ctx, "summarise", map[string]any{"task": "a long job"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if g.cancels.Load() != 1 {
		t.Errorf("the remote got %d cancels", g.cancels.Load())
	}
}

// A call that runs past its timeout cancels its remote task, whether it
// streams or sends and polls (returnImmediately).
func TestTimeoutCancelsTheTask(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(map[bool]string{true: "streaming", false: "blocking"}[streaming], func(t *testing.T) {
			g := &goAgent{exec: hang(nil)}
			url, _ := goServer(t, g, streaming, nil)
			// Long enough for the task's first event to arrive on a loaded
			// machine: a task lode never heard of cannot be cancelled.
			_, r := mount(t, url, lodea2a.WithTimeout(time.Second))
			v, err := r.Call(t.Context(), "summarise", map[string]any{"task": "a long job"})
			if err != nil {
				t.Fatal(err)
			}
			res := v.(tool.Result)
			if !res.IsError || res.Content != "The agent echo_agent did not finish within 1s; its task was cancelled. Ask for less at once, or do this part yourself." {
				t.Fatalf("result %+v", res)
			}
			if n := g.cancels.Load(); n != 1 {
				t.Errorf("the remote got %d cancels, want 1", n)
			}
		})
	}
}

func TestRoleThatForbidsNeverCalls(t *testing.T) {
	g := &goAgent{exec: answer("a", "b", nil)}
	url, _ := goServer(t, g, true, nil)
	reg, _ := mount(t, url, lodea2a.WithReadOnly())
	p, err := policy.Parse([]byte("roles:\n  viewer:\n    allow:\n      tools: [\"local_*\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	enf := policy.NewEnforcer(reg, p)
	st := ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: "viewer"}))
	st2, err := run(t, reg, st, "echo_agent__summarise", `{"task":"x"}`, enf.HandlerOptions())
	if err != nil {
		t.Fatal(err)
	}
	r := resultOf(t, st2)
	if !r.IsError || !strings.HasPrefix(r.Content, `unknown tool "echo_agent__summarise"`) {
		t.Errorf("result %+v", r)
	}
	if g.runs.Load() != 0 {
		t.Errorf("the remote ran %d tasks", g.runs.Load())
	}
}

func TestApprovalBeforeTheRemoteCall(t *testing.T) {
	g := &goAgent{exec: answer("app", "roved", nil)}
	url, _ := goServer(t, g, true, nil)
	// Not read-only: every skill is destructive, so it waits for a person.
	reg, _ := mount(t, url)
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "go"})
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg, xtool.WithApprover(xtool.PauseForDecision))),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	prov := script.Play(script.Call("call_1", "echo_agent__summarise", `{"task":"x"}`), script.Text("done"))
	ctx := context.Background()
	_, err := step.Run(ctx, st, prov)
	var pe *loop.PendingError
	if !errors.As(err, &pe) || len(pe.Calls) != 1 {
		t.Fatalf("err %v", err)
	}
	if g.runs.Load() != 0 {
		t.Fatalf("the remote ran %d tasks before approval", g.runs.Load())
	}
	if _, err := step.Resume(ctx, st, prov, []artifact.Decision{loop.Approve("call_1")}); err != nil {
		t.Fatal(err)
	}
	if r := resultOf(t, st); r.IsError || r.Content != "approved" {
		t.Errorf("result %+v", r)
	}
	if g.runs.Load() != 1 {
		t.Errorf("runs %d", g.runs.Load())
	}
}

// httpClientWatch calls seen once a response body its client read has
// held word: lode has then read it.
type httpClientWatch struct {
	word string
	seen func()
	once sync.Once
}

func (w *httpClientWatch) client() *http.Client { return &http.Client{Transport: w} }

func (w *httpClientWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &watchReader{ReadCloser: resp.Body, w: w}
	}
	return resp, err
}

type watchReader struct {
	io.ReadCloser
	w   *httpClientWatch
	buf []byte
}

func (r *watchReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.buf = append(r.buf, p[:n]...)
	if strings.Contains(string(r.buf), r.w.word) {
		r.w.once.Do(r.w.seen)
	}
	return n, err
}

// usageObserver keeps the usage events a Step reports.
type usageObserver chan loop.UsageEvent

func (o usageObserver) Emit(_ context.Context, ev loop.Event) {
	if u, ok := ev.(loop.UsageEvent); ok {
		o <- u
	}
}

func TestRemoteUsageCountsTowardTheRun(t *testing.T) {
	meta := map[string]any{lodea2a.MetaUsage: map[string]any{"input_tokens": 120, "output_tokens": 30, "model": "remote-model"}}
	g := &goAgent{exec: answer("a", "b", meta)}
	url, _ := goServer(t, g, true, nil)
	reg, _ := mount(t, url, lodea2a.WithReadOnly())
	obs := make(usageObserver, 4)
	if _, err := run(t, reg, nil, "echo_agent__summarise", `{"task":"x"}`, nil, loop.WithObserver(obs)); err != nil {
		t.Fatal(err)
	}
	// The observer is told in order, before the run's end is; waiting
	// for the one event is enough.
	if u := <-obs; u.Usage.InputTokens != 120 || u.Usage.OutputTokens != 30 || u.Usage.Model != "remote-model" || u.For != "a2a echo_agent" {
		t.Errorf("usage %+v", u)
	}
}

// flatPrices prices each model's usage at a flat amount.
type flatPrices map[string]float64

func (p flatPrices) Cost(model string, _ artifact.Usage) (float64, bool) {
	usd, ok := p[model]
	return usd, ok
}

func TestRemoteSpendBindsTheCallersCostLimit(t *testing.T) {
	meta := map[string]any{lodea2a.MetaUsage: map[string]any{"input_tokens": 5000, "output_tokens": 900, "model": "remote-model"}}
	g := &goAgent{exec: answer("a", "b", meta)}
	url, _ := goServer(t, g, true, nil)
	reg, _ := mount(t, url, lodea2a.WithReadOnly())
	st := ledger.NewThread()
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "go"})
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
		loop.WithPricer(flatPrices{"m": 0, "remote-model": 1}), loop.WithMaxCost(0.5))
	prov := script.New([]script.Step{script.Call("call_1", "echo_agent__summarise", `{"task":"x"}`), script.Text("done")}, script.WithModel("m"))
	_, err := step.Run(context.Background(), st, prov)
	var le *loop.LimitError
	if !errors.As(err, &le) || le.Limit != loop.LimitCost || le.UsedUSD != 1 {
		t.Fatalf("err %v, want the cost limit at $1", err)
	}
}
