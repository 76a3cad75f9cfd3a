package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("encoder bug") }

type badStringer struct{}

func (badStringer) String() string { panic("stringer bug") }

// hostileFixture is a registry whose tools misbehave in the ways a tool
// or a model can.
func hostileFixture(t *testing.T) tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ret := func(v any, err error) tool.ToolFunc {
		return func(context.Context, tool.Sandbox, map[string]any) (any, error) { return v, err }
	}
	must(tool.RegisterFunc(reg, "sum", "Add a and b", func(_ context.Context, in sumIn) (int, error) { return in.A + in.B, nil }))
	must(reg.Register(tool.Tool{Name: "echo", Schema: json.RawMessage(`{"type":"object","properties":{"s":{"type":"string","maxLength":5},"n":{"type":"integer","minimum":0},"k":{"enum":["a","b"]}},"required":["s"]}`)},
		func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) { return args, nil }))
	must(reg.Register(tool.Tool{Name: "loud_error"}, ret(nil, errors.New(strings.Repeat("e", 100000)))))
	must(reg.Register(tool.Tool{Name: "loud_panic"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		panic(strings.Repeat("p", 100000))
	}))
	must(reg.Register(tool.Tool{Name: "bad_utf8"}, ret("ok \xff\xfe done", nil)))
	must(reg.Register(tool.Tool{Name: "marshal_panics"}, ret(panicky{}, nil)))
	must(reg.Register(tool.Tool{Name: "stringer_panics"}, ret(badStringer{}, nil)))
	m := map[string]any{}
	m["self"] = m
	must(reg.Register(tool.Tool{Name: "map_cycle"}, ret(m, nil)))
	must(reg.Register(tool.Tool{Name: "result_value"}, ret(tool.Result{Content: "done", Value: 7}, nil)))
	must(reg.Register(tool.Tool{Name: "nil_result"}, ret((*tool.Result)(nil), nil)))
	return reg
}

// Every bad input gets one error result with an exact, bounded, valid UTF-8
// message; the loop is never asked to deal with anything else.
func TestHostileCalls(t *testing.T) {
	reg := hostileFixture(t)
	h := xtool.NewHandler(reg, xtool.WithLogger(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))))
	offered := "Tools available in this turn: bad_utf8, echo, loud_error, loud_panic, map_cycle, marshal_panics, nil_result, result_value, stringer_panics, sum."
	hugeName := strings.Repeat("n", 1<<20)
	hugeValue := strings.Repeat("z", 1<<20)
	cases := []struct {
		name    string
		call    artifact.ToolCall
		isError bool
		content string // exact, or a prefix when it ends in "…"
	}{
		{"empty name", artifact.ToolCall{ID: "1"}, true, `unknown tool "". ` + offered},
		{"invalid UTF-8 name", artifact.ToolCall{ID: "1", Name: "\xff\xfe"}, true, `unknown tool "\xff\xfe". ` + offered},
		{"NUL in name", artifact.ToolCall{ID: "1", Name: "sum\x00"}, true, `unknown tool "sum\x00". ` + offered},
		{"huge name", artifact.ToolCall{ID: "1", Name: hugeName}, true, `unknown tool "` + hugeName[:100] + `"… (1048576 bytes). ` + offered},
		{"map tool, no arguments", call("echo", ""), true, `invalid arguments for echo: arguments do not match the schema: validating root: required: missing properties: ["s"]. The arguments you sent were: (nothing)`},
		{"map tool, null", call("echo", "null"), true, `invalid arguments for echo: arguments must be a JSON object, got null. The arguments you sent were: "null"`},
		{"map tool, array", call("echo", `["s"]`), true, `invalid arguments for echo: arguments must be a JSON object, got an array. The arguments you sent were: "[\"s\"]"`},
		{"map tool, string", call("echo", `"s"`), true, `invalid arguments for echo: arguments must be a JSON object, got a string. The arguments you sent were: "\"s\""`},
		{"map tool, trailing NUL", call("echo", "{\"s\":\"a\"}\x00"), true, `invalid arguments for echo: arguments are not valid JSON (invalid character '\x00' after top-level value); send a JSON object. The arguments you sent were: "{\"s\":\"a\"}\x00"`},
		{"NUL inside a string", call("echo", `{"s":"a\u0000b"}`), false, `{"s":"a\u0000b"}`},
		{"maxLength", call("echo", `{"s":"toolong"}`), true, `invalid arguments for echo: arguments do not match the schema: validating root: validating /properties/s: maxLength: "toolong" contains 7 Unicode code points, more than 5. The arguments you sent were: "{\"s\":\"toolong\"}"`},
		{"minimum", call("echo", `{"s":"a","n":-1}`), true, `invalid arguments for echo: arguments do not match the schema: validating root: validating /properties/n: minimum: -1/1 is less than 0.000000. The arguments you sent were: "{\"s\":\"a\",\"n\":-1}"`},
		{"enum", call("echo", `{"s":"a","k":"c"}`), true, `invalid arguments for echo: arguments do not match the schema: validating root: validating /properties/k: enum: c does not equal any of: [a b]. The arguments you sent were: "{\"s\":\"a\",\"k\":\"c\"}"`},
		{"huge value breaking the schema", call("echo", `{"s":"`+hugeValue+`"}`), true, `invalid arguments for echo: arguments do not match the schema: validating root: validating /properties/s: maxLength: "zzz…`},
		{"huge arguments, not JSON", call("sum", "{"+hugeValue), true, `invalid arguments for sum: arguments are not valid JSON (invalid character 'z' looking for beginning of object key string); send a JSON object. The arguments you sent were: "{` + hugeValue[:299] + `"… (1048577 bytes)`},
		{"typed tool, number too big", call("sum", `{"a":1e400,"b":1}`), true, `invalid arguments for sum: arguments are not valid JSON (json: cannot unmarshal number 1e400 into Go value of type float64); send a JSON object. The arguments you sent were: "{\"a\":1e400,\"b\":1}"`},
		{"typed tool, fraction for an integer", call("sum", `{"a":1.5,"b":1}`), true, `invalid arguments for sum: arguments do not match the schema: validating root: validating /properties/a: type: 1.5 has type "number", want "integer". The arguments you sent were: "{\"a\":1.5,\"b\":1}"`},
		{"panic with a huge value", call("loud_panic", "{}"), true, "the tool loud_panic crashed (panic: " + strings.Repeat("p", 193) + "… (100007 bytes)); this is a fault in the tool, not in your arguments"},
		{"result not valid UTF-8", call("bad_utf8", "{}"), false, "ok \uFFFD done"},
		{"MarshalJSON panics", call("marshal_panics", "{}"), true, "the tool marshal_panics returned a result that cannot be shown: rendering panicked: encoder bug"},
		{"String panics", call("stringer_panics", "{}"), true, "the tool stringer_panics returned a result that cannot be shown: rendering panicked: stringer bug"},
		{"map cycle", call("map_cycle", "{}"), true, "the tool map_cycle returned a result that cannot be shown: json: unsupported value: encountered a cycle via map[string]interface {}"},
		{"Result by value", call("result_value", "{}"), false, "done"},
		{"nil *Result", call("nil_result", "{}"), false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := h.Execute(context.Background(), c.call)
			checkResult(t, res, c.call, c.isError, c.content)
			if !utf8.ValidString(res.Content) {
				t.Errorf("content is not valid UTF-8: %q", res.Content)
			}
			if len(res.Content) > 2000 {
				t.Errorf("an error message of %d bytes", len(res.Content))
			}
		})
	}
}

// A tool's own error of any size is bounded like a result: head and tail
// shown, the whole kept in Full.
func TestHugeErrorIsBoundedButKept(t *testing.T) {
	h := xtool.NewHandler(hostileFixture(t), xtool.WithBudget(tool.Budget{Bytes: 1000}))
	res := h.Execute(context.Background(), call("loud_error", "{}"))
	full := strings.Repeat("e", 100000)
	if !res.IsError || !res.Truncated || res.Full != full {
		t.Fatalf("IsError %v Truncated %v, full kept %v", res.IsError, res.Truncated, res.Full == full)
	}
	want := strings.Repeat("e", 500) + "\n[… lode cut 99000 of 100000 bytes (0 of 1 lines) here to fit the result budget; the application keeps the whole result — call the tool again with narrower arguments to see this part …]\n" + strings.Repeat("e", 500)
	if res.Content != want {
		t.Fatalf("content = %.300q…", res.Content)
	}
}

func TestResultValueKeptAsReturned(t *testing.T) {
	h := xtool.NewHandler(hostileFixture(t))
	if res := h.Execute(context.Background(), call("result_value", "{}")); !reflect.DeepEqual(res.Value, tool.Result{Content: "done", Value: 7}) {
		t.Fatalf("Value = %#v, want the tool.Result the tool returned", res.Value)
	}
	if res := h.Execute(context.Background(), call("bad_utf8", "{}")); res.Value != "ok \xff\xfe done" {
		t.Fatalf("Value = %q, want the bytes the tool returned", res.Value)
	}
}

// Two identical calls with one ID: the first runs, the second is refused,
// and the tool runs once.
func TestDuplicateIdenticalCalls(t *testing.T) {
	reg := tool.NewRegistry()
	var ran atomic.Int32
	_ = reg.Register(tool.Tool{Name: "charge"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		ran.Add(1)
		return "charged", nil
	})
	c := artifact.ToolCall{ID: "same", Name: "charge", Arguments: `{}`}
	prov := script.Play(script.Reply(c, c, c), script.Text("ok"))
	th := ledger.NewThread()
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	if _, err := step.Run(context.Background(), th, prov); err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	res := th.Turns()[1].Artifacts
	if r := res[0].(artifact.ToolResult); r.IsError || r.Content != "charged" {
		t.Fatalf("first call: %+v", r)
	}
	for _, a := range res[1:] {
		if r := a.(artifact.ToolResult); !r.IsError || r.Content != `another call in this answer already uses the id "same"; this call to charge was not run — give every call its own id` {
			t.Fatalf("duplicate: %+v", r)
		}
	}
}

func TestNilRegistryIsEmpty(t *testing.T) {
	r := xtool.NewHandler(nil).Execute(context.Background(), call("x", "{}"))
	if !r.IsError || r.Content != `unknown tool "x". No tools are available in this turn.` {
		t.Fatalf("result = %+v", r)
	}
}

// A call that waits for a slot of the handler's concurrency bound and is
// cancelled meanwhile is a cancelled result.
func TestCancelledWhileWaitingForASlot(t *testing.T) {
	reg := tool.NewRegistry()
	started, release := make(chan struct{}), make(chan struct{})
	_ = reg.Register(tool.Tool{Name: "hold"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		close(started)
		<-release
		return "held", nil
	})
	_ = reg.Register(tool.Tool{Name: "next"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "ran", nil })
	h := xtool.NewHandler(reg, xtool.WithConcurrency(1))
	done := make(chan artifact.ToolResult)
	go func() { done <- h.Execute(context.Background(), call("hold", "{}")) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Cancelled before it starts: the check comes first.
	if r := h.Execute(ctx, call("next", "{}")); r.Content != "the call to next was cancelled before it started" {
		t.Fatalf("result = %+v", r)
	}
	// Live when the call starts, cancelled by the time it waits for the slot.
	r := h.Execute(&cancelsAfterFirstLook{Context: context.Background()}, call("next", "{}"))
	close(release)
	<-done
	if !r.IsError || r.Content != "the call to next was cancelled while waiting to run" {
		t.Fatalf("result = %+v", r)
	}
}

// cancelsAfterFirstLook is a context that reports itself live to its first
// Err call and cancelled from then on.
type cancelsAfterFirstLook struct {
	context.Context
	looks atomic.Int32
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *cancelsAfterFirstLook) Done() <-chan struct{} { return closed }
func (c *cancelsAfterFirstLook) Err() error {
	if c.looks.Add(1) == 1 {
		return nil
	}
	return context.Canceled
}

// Spans and metrics take only what exporters accept and what cannot
// multiply series: valid UTF-8, bounded names, and "_OTHER" in metrics for
// every name the registry does not hold.
func TestTelemetryOfHostileNames(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	h := xtool.NewHandler(hostileFixture(t), xtool.WithTracer(tp.Tracer("t")), xtool.WithMeter(mp.Meter("t")))
	for _, c := range []artifact.ToolCall{
		{ID: "\xff", Name: "bad\xffname"},
		{ID: "2", Name: strings.Repeat("é", 1000)},
		{ID: "3", Name: "sum", Arguments: `{"a":1,"b":2}`},
	} {
		h.Execute(context.Background(), c)
	}
	spans := rec.Ended()
	wantNames := []string{"execute_tool bad\uFFFDname", "execute_tool " + strings.Repeat("é", 64) + "…", "execute_tool sum"}
	for i, s := range spans {
		if s.Name() != wantNames[i] {
			t.Errorf("span %d named %q, want %q", i, s.Name(), wantNames[i])
		}
		for _, kv := range s.Attributes() {
			if !utf8.ValidString(kv.Value.Emit()) {
				t.Errorf("span %d attribute %s = %q is not valid UTF-8", i, kv.Key, kv.Value.Emit())
			}
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				name, _ := dp.Attributes.Value(attribute.Key("gen_ai.tool.name"))
				got[name.AsString()] += dp.Count
			}
		}
	}
	if len(got) != 2 || got["_OTHER"] != 2 || got["sum"] != 1 {
		t.Fatalf("metric series by tool name: %v", got)
	}
}

// The filter's slice is offered as it is but clipped: an adapter that
// appends to the request's tools cannot write into it.
func TestFilteredToolsClipped(t *testing.T) {
	reg := hostileFixture(t)
	kept := make([]tool.Tool, 0, 8)
	filter := func(_ context.Context, _ ledger.State, tools []tool.Tool) []tool.Tool {
		kept = append(kept[:0], tools[0])
		return kept
	}
	req := &provider.Request{}
	if err := xtool.WithFilteredTools(reg, filter).ApplyInvoke(context.Background(), ledger.NewThread(), req); err != nil {
		t.Fatal(err)
	}
	_ = append(req.Tools, tool.Tool{Name: "intruder"})
	if kept[:2][1].Name != "" {
		t.Fatal("an append to the request wrote into the filter's slice")
	}
}

// With no budget anywhere, the defaults apply, to the byte and the line.
func TestDefaultBudget(t *testing.T) {
	lines := func(n int) string { return strings.TrimSuffix(strings.Repeat("x\n", n), "\n") }
	cases := []struct {
		name string
		out  string
		cut  bool
	}{
		{"bytes at the limit", strings.Repeat("b", xtool.DefaultBudgetBytes), false},
		{"one byte over", strings.Repeat("b", xtool.DefaultBudgetBytes+1), true},
		{"lines at the limit", lines(xtool.DefaultBudgetLines), false},
		{"one line over", lines(xtool.DefaultBudgetLines + 1), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg := tool.NewRegistry()
			_ = reg.Register(tool.Tool{Name: "out"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return c.out, nil })
			r := xtool.NewHandler(reg).Execute(context.Background(), call("out", "{}"))
			if r.Truncated != c.cut || (r.Content == c.out) == c.cut {
				t.Fatalf("truncated %v, content kept whole %v", r.Truncated, r.Content == c.out)
			}
		})
	}
}

// Nil options mean their defaults: no meter, no sandbox.
func TestNilOptions(t *testing.T) {
	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "where"}, func(_ context.Context, sb tool.Sandbox, _ map[string]any) (any, error) { return sb.Name(), nil })
	h := xtool.NewHandler(reg, xtool.WithMeter(nil), xtool.WithTracer(nil), xtool.WithSandbox(nil), xtool.WithToolSandbox("where", nil), xtool.WithApprover(nil))
	if r := h.Execute(context.Background(), call("where", "{}")); r.IsError || r.Content != "none" {
		t.Fatalf("result = %+v", r)
	}
}
