package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

type sumIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type cyclic struct {
	Next *cyclic `json:"next"`
}

// fixture is a registry with one tool for each way a call can go.
func fixture(t *testing.T, block chan struct{}) tool.Registry {
	t.Helper()
	return fixtureRunning(t, block, false)
}

// fixtureRunning is fixture with every tool that returns at once marked
// Inline when inline is set; the tool that hangs never is, as it would not
// keep the promise.
func fixtureRunning(t *testing.T, block chan struct{}, inline bool) tool.Registry {
	t.Helper()
	reg := &inlineRegistry{Registry: tool.NewRegistry(), inline: inline}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var sumOpts []tool.FuncOption
	if inline {
		sumOpts = append(sumOpts, tool.WithInline())
	}
	must(tool.RegisterFunc(reg.Registry, "sum", "Add a and b", func(_ context.Context, in sumIn) (int, error) { return in.A + in.B, nil }, sumOpts...))
	plain := func(v any, err error) tool.ToolFunc {
		return func(context.Context, tool.Sandbox, map[string]any) (any, error) { return v, err }
	}
	must(reg.Register(tool.Tool{Name: "greet"}, plain("hello, world", nil)))
	must(reg.Register(tool.Tool{Name: "fails"}, plain(nil, errors.New("the database is read-only"))))
	must(reg.Register(tool.Tool{Name: "panics"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		var m map[string]int
		m["boom"]++
		return nil, nil
	}))
	must(reg.Registry.Register(tool.Tool{Name: "hangs", Timeout: 30 * time.Millisecond}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		<-block // ignores its context on purpose
		return "late", nil
	}))
	must(reg.Register(tool.Tool{Name: "chan"}, plain(make(chan int), nil)))
	c := &cyclic{}
	c.Next = c
	must(reg.Register(tool.Tool{Name: "cycle"}, plain(c, nil)))
	must(reg.Register(tool.Tool{Name: "badjson"}, plain(json.RawMessage(`{"a":`), nil)))
	must(reg.Register(tool.Tool{Name: "big"}, plain(strings.Repeat("line of output\n", 10000), nil)))
	must(reg.Register(tool.Tool{Name: "soft"}, plain(&tool.Result{IsError: true, Content: "no such ticket: 42"}, nil)))
	must(reg.Register(tool.Tool{Name: "obj"}, plain(map[string]any{"html": "<b>&</b>", "n": 1}, nil)))
	return reg.Registry
}

// inlineRegistry marks the tools registered through it Inline when inline
// is set.
type inlineRegistry struct {
	tool.Registry
	inline bool
}

func (r *inlineRegistry) Register(t tool.Tool, fn tool.ToolFunc) error {
	t.Inline = r.inline
	return r.Registry.Register(t, fn)
}

func call(name, args string) artifact.ToolCall {
	return artifact.ToolCall{ID: "call_" + name, Name: name, Arguments: args}
}

// TestExecuteOutcomes runs a call for each way a call can go, with the
// tools on goroutines of their own and, where they promise to return at
// once, inline: the outcomes read the same.
func TestExecuteOutcomes(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) { testExecuteOutcomes(t, inline) })
	}
}

func testExecuteOutcomes(t *testing.T, inline bool) {
	block := make(chan struct{})
	defer close(block)
	reg := fixtureRunning(t, block, inline)
	h := xtool.NewHandler(reg, xtool.WithLogger(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))))
	cases := []struct {
		call    artifact.ToolCall
		isError bool
		content string // exact, or a prefix when it ends in "…"
	}{
		{call("sum", `{"a":2,"b":3}`), false, "5"},
		{call("greet", ``), false, "hello, world"},
		{call("obj", `{}`), false, `{"html":"<b>&</b>","n":1}`},
		{call("nope", `{}`), true, `unknown tool "nope". Tools available in this turn: badjson, big, chan, cycle, fails, greet, hangs, obj, panics, soft, sum.`},
		{call("sum", `{"a":2,`), true, `invalid arguments for sum: arguments are not valid JSON (unexpected end of JSON input); send a JSON object. The arguments you sent were: "{\"a\":2,"`},
		{call("sum", ``), true, `invalid arguments for sum: arguments do not match the schema: validating root: required: missing properties: ["a" "b"]. The arguments you sent were: (nothing)`},
		{call("sum", `null`), true, `invalid arguments for sum: arguments must be a JSON object, got null. The arguments you sent were: "null"`},
		{call("sum", `[1,2]`), true, `invalid arguments for sum: arguments must be a JSON object, got an array. The arguments you sent were: "[1,2]"`},
		{call("sum", `{"a":"2","b":3}`), true, `invalid arguments for sum: arguments do not match the schema: validating root: validating /properties/a: type: 2 has type "string", want "integer". The arguments you sent were: "{\"a\":\"2\",\"b\":3}"`},
		{call("sum", `{"a":1,"b":2,"c":3}`), true, `invalid arguments for sum: arguments do not match the schema: validating root: unexpected additional properties ["c"]. The arguments you sent were: "{\"a\":1,\"b\":2,\"c\":3}"`},
		{call("fails", `{}`), true, "the database is read-only"},
		{call("panics", `{}`), true, "the tool panics crashed (panic: assignment to entry in nil map); this is a fault in the tool, not in your arguments"},
		{call("hangs", `{}`), true, "the call to hangs timed out after 30ms and was abandoned; it may have partly taken effect"},
		{call("chan", `{}`), true, "the tool chan returned a result that cannot be shown: json: unsupported type: chan int"},
		{call("cycle", `{}`), true, "the tool cycle returned a result that cannot be shown: json: unsupported value: encountered a cycle via *tool_test.cyclic"},
		{call("badjson", `{}`), true, "the tool badjson returned a result that cannot be shown: the tool returned invalid JSON"},
		{call("soft", `{}`), true, "no such ticket: 42"},
	}
	for _, c := range cases {
		t.Run(c.call.Name+" "+c.call.Arguments, func(t *testing.T) {
			checkResult(t, h.Execute(context.Background(), c.call), c.call, c.isError, c.content)
		})
	}
}

func TestHugeResultIsBoundedButKept(t *testing.T) {
	reg := fixture(t, nil)
	h := xtool.NewHandler(reg, xtool.WithBudget(tool.Budget{Bytes: 2000, Lines: 40}))
	res := h.Execute(context.Background(), call("big", "{}"))
	full := strings.Repeat("line of output\n", 10000)
	if res.IsError || !res.Truncated || res.Full != full || res.Value != full {
		t.Fatalf("IsError %v Truncated %v, full kept %v", res.IsError, res.Truncated, res.Full == full)
	}
	if len(res.Content) > 2000+300 {
		t.Fatalf("model sees %d bytes", len(res.Content))
	}
	if !strings.HasPrefix(res.Content, "line of output\n") || !strings.HasSuffix(res.Content, "line of output\n") {
		t.Fatalf("head or tail lost: %q", res.Content)
	}
	if !strings.Contains(res.Content, "lode cut 149415 of 150000 bytes (9961 of 10001 lines)") {
		t.Fatalf("marker missing or wrong: %q", res.Content)
	}
}

func TestFilterBindsExecution(t *testing.T) {
	reg := fixture(t, nil)
	onlyGreet := func(_ context.Context, _ ledger.State, tools []tool.Tool) []tool.Tool {
		var out []tool.Tool
		for _, t := range tools {
			if t.Name == "greet" {
				out = append(out, t)
			}
		}
		return out
	}
	prov := script.Play(script.Reply(call("sum", `{"a":1,"b":1}`), call("greet", "{}"), call("ghost", "{}")), script.Text("ok"))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, onlyGreet)))
	if _, err := step.Run(context.Background(), th, prov); err != nil {
		t.Fatal(err)
	}
	if got := prov.Requests()[0].Tools; len(got) != 1 || got[0].Name != "greet" {
		t.Fatalf("offered %v", got)
	}
	res := th.Turns()[2].Artifacts
	want := []struct {
		isError bool
		content string
	}{
		{true, `unknown tool "sum". Tools available in this turn: greet.`},
		{false, "hello, world"},
		{true, `unknown tool "ghost". Tools available in this turn: greet.`},
	}
	for i, w := range want {
		r := res[i].(artifact.ToolResult)
		if r.IsError != w.isError || r.Content != w.content {
			t.Errorf("result %d = %v %q, want %v %q", i, r.IsError, r.Content, w.isError, w.content)
		}
	}
}

func TestNilFilterOffersEverything(t *testing.T) {
	reg := fixture(t, nil)
	prov := script.Play(script.Text("ok"))
	th := ledger.NewThread()
	if _, err := loop.New().Turn(context.Background(), th, prov, xtool.WithFilteredTools(reg, nil)); err != nil {
		t.Fatal(err)
	}
	if got, want := len(prov.Requests()[0].Tools), len(reg.Tools()); got != want {
		t.Fatalf("offered %d of %d tools", got, want)
	}
}

func TestNoToolsOfferedRefusesAll(t *testing.T) {
	reg := fixture(t, nil)
	prov := script.Play(script.Call("1", "greet", "{}"), script.Text("ok"))
	th := ledger.NewThread()
	if _, err := loop.New(loop.WithHandlers(xtool.NewHandler(reg))).Run(context.Background(), th, prov); err != nil {
		t.Fatal(err)
	}
	r := th.Turns()[1].Artifacts[0].(artifact.ToolResult)
	if !r.IsError || r.Content != `unknown tool "greet". No tools are available in this turn.` {
		t.Fatalf("result = %+v", r)
	}
}

func TestDuplicateCallIDRefused(t *testing.T) {
	reg := fixture(t, nil)
	prov := script.Play(script.Reply(
		artifact.ToolCall{ID: "same", Name: "greet", Arguments: "{}"},
		artifact.ToolCall{ID: "same", Name: "sum", Arguments: `{"a":1,"b":2}`},
	), script.Text("ok"))
	th := ledger.NewThread()
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	if _, err := step.Run(context.Background(), th, prov); err != nil {
		t.Fatal(err)
	}
	res := th.Turns()[1].Artifacts
	if r := res[0].(artifact.ToolResult); r.IsError || r.Content != "hello, world" {
		t.Fatalf("first call: %+v", r)
	}
	if r := res[1].(artifact.ToolResult); !r.IsError || !strings.Contains(r.Content, `already uses the id "same"; this call to sum was not run`) {
		t.Fatalf("duplicate: %+v", r)
	}
}

func TestCancellation(t *testing.T) {
	reg := tool.NewRegistry()
	started := make(chan struct{})
	_ = reg.Register(tool.Tool{Name: "wait"}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h := xtool.NewHandler(reg)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := h.Execute(ctx, call("wait", "{}")); !r.IsError || r.Content != "the call to wait was cancelled before it started" {
		t.Fatalf("pre-cancelled: %+v", r)
	}

	ctx, cancel = context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if r := h.Execute(ctx, call("wait", "{}")); !r.IsError || r.Content != "the call to wait was cancelled before it finished" {
		t.Fatalf("cancelled mid-call: %+v", r)
	}
}

func TestTimeouts(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "slow"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		<-block
		return nil, nil
	})
	_ = reg.Register(tool.Tool{Name: "patient", Timeout: time.Hour}, func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
		dl, _ := ctx.Deadline()
		return time.Until(dl) > 30*time.Minute, nil
	})
	h := xtool.NewHandler(reg, xtool.WithTimeout(20*time.Millisecond))
	if r := h.Execute(context.Background(), call("slow", "{}")); !r.IsError || !strings.Contains(r.Content, "timed out after 20ms") {
		t.Fatalf("default timeout: %+v", r)
	}
	if r := h.Execute(context.Background(), call("patient", "{}")); r.IsError || r.Content != "true" {
		t.Fatalf("per-tool timeout not applied: %+v", r)
	}
}

// remoteSource fails in the ways a server does.
type remoteSource struct{ block chan struct{} }

func (remoteSource) Name() string { return "remote" }
func (remoteSource) Tools(context.Context) ([]tool.Tool, error) {
	return []tool.Tool{{Name: "down"}, {Name: "hang", Timeout: 20 * time.Millisecond}, {Name: "garbage"}, {Name: "iserror"}}, nil
}
func (r remoteSource) Call(ctx context.Context, name string, _ map[string]any) (any, error) {
	switch name {
	case "down":
		return nil, errors.New("connection refused")
	case "hang":
		<-r.block
		return nil, nil
	case "garbage":
		return func() {}, nil
	}
	return &tool.Result{IsError: true, Content: "quota exceeded", Parts: []artifact.Artifact{artifact.Image{URL: "x"}}}, nil
}

func TestRemoteFailures(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	reg := tool.NewRegistry(tool.WithMCPServer(remoteSource{block}))
	h := xtool.NewHandler(reg)
	cases := map[string]string{
		"remote__down":    "the tool remote__down failed: connection refused",
		"remote__hang":    "the call to remote__hang timed out after 20ms and was abandoned; it may have partly taken effect",
		"remote__garbage": "the tool remote__garbage returned a result that cannot be shown: json: unsupported type: func()",
		"remote__iserror": "quota exceeded",
	}
	for name, want := range cases {
		r := h.Execute(context.Background(), call(name, "{}"))
		if !r.IsError || r.Content != want {
			t.Errorf("%s: %v %q, want %q", name, r.IsError, r.Content, want)
		}
	}
	if r := h.Execute(context.Background(), call("remote__iserror", "{}")); len(r.Parts) != 1 {
		t.Errorf("parts lost: %+v", r)
	}
}

func TestApproval(t *testing.T) {
	reg := tool.NewRegistry()
	ran := 0
	_ = reg.Register(tool.Tool{Name: "drop_table", Hints: tool.Hints{Destructive: true}}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		ran++
		return "dropped", nil
	})
	_ = reg.Register(tool.Tool{Name: "read"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "read", nil })
	cases := []struct {
		name     string
		approver xtool.Approver
		want     string
		isError  bool
	}{
		{"approved", func(context.Context, tool.Tool, artifact.ToolCall) error { return nil }, "dropped", false},
		{"denied", func(context.Context, tool.Tool, artifact.ToolCall) error { return xtool.ErrDenied }, "the call to drop_table was not approved: xtool: call denied", true},
		{"approver fails", func(context.Context, tool.Tool, artifact.ToolCall) error { return errors.New("approval service down") }, "the call to drop_table was not approved: approval service down", true},
		{"approver panics", func(context.Context, tool.Tool, artifact.ToolCall) error { panic("bug") }, "the call to drop_table was not approved: the approver failed: bug", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ran = 0
			asked := 0
			h := xtool.NewHandler(reg, xtool.WithApprover(func(ctx context.Context, tl tool.Tool, ca artifact.ToolCall) error {
				asked++
				return c.approver(ctx, tl, ca)
			}))
			r := h.Execute(context.Background(), call("drop_table", "{}"))
			if r.IsError != c.isError || r.Content != c.want {
				t.Fatalf("result %v %q", r.IsError, r.Content)
			}
			if wantRan := map[bool]int{true: 0, false: 1}[c.isError]; ran != wantRan {
				t.Fatalf("tool ran %d times", ran)
			}
			if r := h.Execute(context.Background(), call("read", "{}")); r.Content != "read" || asked != 1 {
				t.Fatalf("non-destructive tool: %q, approver asked %d times", r.Content, asked)
			}
		})
	}
}

type dirSandbox struct{ dir string }

func (d dirSandbox) Name() string { return "dir:" + d.dir }
func (d dirSandbox) Dir() string  { return d.dir }

func TestSandboxesFailClosed(t *testing.T) {
	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "pwd"}, func(_ context.Context, sb tool.Sandbox, _ map[string]any) (any, error) {
		d, ok := sb.(interface{ Dir() string })
		if !ok {
			return nil, fmt.Errorf("%w: pwd needs a directory, got sandbox %q", tool.ErrNoSandbox, sb.Name())
		}
		return d.Dir(), nil
	})
	_ = reg.Register(tool.Tool{Name: "pwd2"}, func(_ context.Context, sb tool.Sandbox, _ map[string]any) (any, error) {
		return sb.Name(), nil
	})
	// A model cannot pick a sandbox: nothing in the arguments reaches it.
	if r := xtool.NewHandler(reg).Execute(context.Background(), call("pwd", `{"sandbox":"/"}`)); !r.IsError || r.Content != `tool: no sandbox assigned: pwd needs a directory, got sandbox "none"` {
		t.Fatalf("no sandbox: %+v", r)
	}
	h := xtool.NewHandler(reg, xtool.WithSandbox(dirSandbox{"/work/a"}), xtool.WithToolSandbox("pwd2", dirSandbox{"/work/b"}))
	if r := h.Execute(context.Background(), call("pwd", "{}")); r.Content != "/work/a" {
		t.Fatalf("assigned sandbox: %+v", r)
	}
	if r := h.Execute(context.Background(), call("pwd2", "{}")); r.Content != "dir:/work/b" {
		t.Fatalf("per-tool sandbox: %+v", r)
	}
}

func TestHandlerConcurrencyBound(t *testing.T) {
	reg := tool.NewRegistry()
	var mu sync.Mutex
	in, peak := 0, 0
	_ = reg.Register(tool.Tool{Name: "work"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		mu.Lock()
		in++
		peak = max(peak, in)
		mu.Unlock()
		mu.Lock()
		in--
		mu.Unlock()
		return "ok", nil
	})
	h := xtool.NewHandler(reg, xtool.WithConcurrency(1))
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); h.Execute(context.Background(), call("work", "{}")) }()
	}
	wg.Wait()
	if peak != 1 {
		t.Fatalf("peak %d with a bound of 1", peak)
	}
}

func TestSpansAndMetrics(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg := fixture(t, nil)
	_ = reg.Mount(context.Background(), remoteSource{})
	var logs bytes.Buffer
	h := xtool.NewHandler(reg, xtool.WithTracer(tp.Tracer("test")), xtool.WithMeter(mp.Meter("test")),
		xtool.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	for _, c := range []artifact.ToolCall{call("greet", "{}"), call("panics", "{}"), call("sum", "[]"), call("remote__down", "{}"), call("nope", "{}")} {
		h.Execute(context.Background(), c)
	}
	spans := rec.Ended()
	if len(spans) != 5 {
		t.Fatalf("%d spans", len(spans))
	}
	want := []struct {
		name, typ, errType string
	}{
		{"execute_tool greet", "function", ""},
		{"execute_tool panics", "function", "panic"},
		{"execute_tool sum", "function", "invalid_arguments"},
		{"execute_tool remote__down", "extension", "remote_error"},
		{"execute_tool nope", "function", "tool_not_found"},
	}
	for i, w := range want {
		s := spans[i]
		attrs := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value.Emit()
		}
		if s.Name() != w.name || attrs["gen_ai.operation.name"] != "execute_tool" || attrs["gen_ai.tool.type"] != w.typ ||
			attrs["gen_ai.tool.call.id"] == "" || attrs["gen_ai.tool.name"] != strings.TrimPrefix(w.name, "execute_tool ") {
			t.Errorf("span %d: %s %v", i, s.Name(), attrs)
		}
		if attrs["error.type"] != w.errType {
			t.Errorf("span %s error.type = %q, want %q", s.Name(), attrs["error.type"], w.errType)
		}
		if (w.errType != "") != (s.Status().Code == codes.Error) {
			t.Errorf("span %s status %v", s.Name(), s.Status())
		}
	}
	var stack bool
	for _, ev := range spans[1].Events() {
		for _, kv := range ev.Attributes {
			if kv.Key == "exception.stacktrace" && strings.Contains(kv.Value.AsString(), "goroutine") {
				stack = true
			}
		}
	}
	if !stack || !strings.Contains(logs.String(), "goroutine") {
		t.Errorf("panic stack missing from span (%v) or log (%q)", stack, logs.String())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var count uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "lode.tool.duration" {
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					count += dp.Count
				}
			}
		}
	}
	if count != 5 {
		t.Errorf("duration histogram counted %d executions", count)
	}
}

func TestHandleIgnoresOtherArtifacts(t *testing.T) {
	h := xtool.NewHandler(tool.NewRegistry())
	emitted := 0
	e := loop.EmitterFunc(func(context.Context, loop.Event) { emitted++ })
	for _, a := range []artifact.Artifact{artifact.Text{Content: "x"}, artifact.Usage{}, artifact.Reasoning{}} {
		if err := h.Handle(context.Background(), a, e); err != nil {
			t.Fatal(err)
		}
	}
	if emitted != 0 {
		t.Fatalf("emitted %d events for non-calls", emitted)
	}
}

// checkResult asserts that res answers call with the given error flag and
// content: exact, or a prefix when want ends in "…".
func checkResult(t *testing.T, res artifact.ToolResult, call artifact.ToolCall, isError bool, want string) {
	t.Helper()
	if res.ToolCallID != call.ID || res.Name != call.Name {
		t.Errorf("result answers %q/%.20q", res.ToolCallID, res.Name)
	}
	if res.IsError != isError {
		t.Errorf("IsError = %v, content %.300q", res.IsError, res.Content)
	}
	if p, ok := strings.CutSuffix(want, "…"); ok {
		if !strings.HasPrefix(res.Content, p) {
			t.Errorf("content = %.300q\nwant prefix %.300q", res.Content, p)
		}
	} else if res.Content != want {
		t.Errorf("content = %.300q\nwant        %.300q", res.Content, want)
	}
}
