package tool_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A caller cannot tell a tool it may not use from one that does not exist:
// not by the text, the error flag, the budget applied, the span's
// error.type and tool type, nor the metric series. Only the span's
// lode.tool.hidden attribute, which the operator reads, says which it was.
func TestHiddenToolReadsAsMissing(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg := fixture(t, nil)
	// A budget of its own and a remote source must not show through either.
	if err := reg.Register(tool.Tool{Name: "tight", Budget: tool.Budget{Bytes: 20}}, func(context.Context, tool.Sandbox, map[string]any) (any, error) {
		return "ran", nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Mount(context.Background(), remoteSource{}); err != nil {
		t.Fatal(err)
	}
	h := xtool.NewHandler(reg, xtool.WithTracer(tp.Tracer("test")), xtool.WithMeter(mp.Meter("test")))
	ctx := xtool.WithOffered(context.Background(), []tool.Tool{{Name: "greet"}, {Name: "sum"}})

	cases := []struct {
		label, name, args string
		hidden            bool
	}{
		{"hidden", "fails", "{}", true},
		{"hidden, own budget", "tight", "{}", true},
		{"hidden remote", "remote__down", "{}", true},
		{"hidden, broken arguments", "panics", `{"a":`, true},
		{"missing", "ghost", "{}", false},
		{"missing remote", "remote__ghost", "{}", false},
		{"missing, broken arguments", "ghost", `{"a":`, false},
		{"garbled", "fails\x00\xff", "{}", false},
		{"empty", "", "", false},
	}
	for _, c := range cases {
		got := h.Execute(ctx, call(c.name, c.args))
		want := artifact.ToolResult{ToolCallID: "call_" + c.name, Name: c.name, IsError: true,
			Content: fmt.Sprintf("unknown tool %q. Tools available in this turn: greet, sum.", c.name)}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v\nwant %+v", c.label, got, want)
		}
	}

	spans := rec.Ended()
	if len(spans) != len(cases) {
		t.Fatalf("%d spans for %d calls", len(spans), len(cases))
	}
	for i, c := range cases {
		s := spans[i]
		attrs := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value.Emit()
		}
		hidden, marked := attrs["lode.tool.hidden"]
		if marked != c.hidden || (marked && hidden != "true") {
			t.Errorf("%s: lode.tool.hidden = %q (set %v), want set %v", c.label, hidden, marked, c.hidden)
		}
		if attrs["error.type"] != "tool_not_found" || attrs["gen_ai.tool.type"] != "function" {
			t.Errorf("%s: span attributes %v", c.label, attrs)
		}
		if st := s.Status(); st.Code != codes.Error || st.Description != "tool_not_found" {
			t.Errorf("%s: span status %+v", c.label, st)
		}
		if len(s.Events()) != 0 {
			t.Errorf("%s: span events %v", c.label, s.Events())
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var series []string
	var count uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				var kv []string
				for _, a := range dp.Attributes.ToSlice() {
					kv = append(kv, string(a.Key)+"="+a.Value.Emit())
				}
				series = append(series, strings.Join(kv, ","))
				count += dp.Count
			}
		}
	}
	wantSeries := []string{"error.type=tool_not_found,gen_ai.operation.name=execute_tool,gen_ai.tool.name=_OTHER,gen_ai.tool.type=function"}
	if !reflect.DeepEqual(series, wantSeries) || count != uint64(len(cases)) {
		t.Errorf("metric series %q counted %d, want %q counted %d", series, count, wantSeries, len(cases))
	}
}

// The refusal lists every tool the caller may use, however many; only the
// result budget cuts the list, with its usual marker, and the ledger keeps
// it whole.
func TestUnknownToolListsEveryTool(t *testing.T) {
	reg := tool.NewRegistry()
	var names []string
	for i := range 100 {
		name := fmt.Sprintf("t%03d", i)
		names = append(names, name)
		if err := reg.Register(tool.Tool{Name: name}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
	}
	full := `unknown tool "ghost". Tools available in this turn: ` + strings.Join(names, ", ") + "."
	offered := xtool.WithOffered(context.Background(), reg.Tools()[:60])
	offeredText := `unknown tool "ghost". Tools available in this turn: ` + strings.Join(names[:60], ", ") + "."
	const budget = 200
	cut := full[:budget/2] +
		fmt.Sprintf("\n[… lode cut %d of %d bytes (0 of 1 lines) here to fit the result budget; the application keeps the whole result — call the tool again with narrower arguments to see this part …]\n", len(full)-budget, len(full)) +
		full[len(full)-budget/2:]

	cases := []struct {
		label   string
		ctx     context.Context
		opts    []xtool.HandlerOption
		content string
		full    string
	}{
		{"unrestricted", context.Background(), nil, full, ""},
		{"offered 60", offered, nil, offeredText, ""},
		{"over the budget", context.Background(), []xtool.HandlerOption{xtool.WithBudget(tool.Budget{Bytes: budget})}, cut, full},
	}
	for _, c := range cases {
		r := xtool.NewHandler(reg, c.opts...).Execute(c.ctx, call("ghost", "{}"))
		if !r.IsError || r.Content != c.content || r.Truncated != (c.full != "") || r.Full != c.full {
			t.Errorf("%s: IsError %v Truncated %v\ncontent %q\nwant    %q\nfull %q", c.label, r.IsError, r.Truncated, r.Content, c.content, r.Full)
		}
	}
}
