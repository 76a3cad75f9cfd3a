package tool_test

import (
	"context"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// gateFixture hides "fails" and "panics", refuses "sum" with a limit and
// lets the rest through; it records the caller it saw.
type gateFixture struct{ seen []string }

func (g *gateFixture) gate(_ context.Context, st ledger.State, t tool.Tool, source string, _ artifact.ToolCall) xtool.Verdict {
	who := ""
	if st != nil {
		who, _ = st.Metadata("role")
	}
	g.seen = append(g.seen, who+"/"+source)
	v := xtool.Verdict{Attrs: []attribute.KeyValue{attribute.String("test.rule", "rule-"+t.Name)}}
	switch t.Name {
	case "fails", "panics":
		v.Hide = true
	case "sum":
		v.Refuse = "the call to sum was refused: limit reached"
	}
	return v
}

// A call the gate hides reads exactly like a call to a tool that does not
// exist, and the list of tools it shows leaves out what the gate hides; a
// limit refusal says so; the gate's attributes reach the span only.
func TestGate(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := fixture(t, nil)
	g := &gateFixture{}
	h := xtool.NewHandler(reg, xtool.WithTracer(tp.Tracer("test")), xtool.WithGate(g.gate))
	plain := xtool.NewHandler(reg)
	ctx := xtool.WithCaller(context.Background(), ledger.NewThread(ledger.WithMetadata(map[string]string{"role": "viewer"})))

	// Unrestricted: the unknown-tool list is the registry's less what the
	// gate hides (a limit hides nothing). A caller outside a loop turn is
	// told what holds for it, not for a turn.
	visible := `unknown tool "fails". Tools available to this caller: badjson, big, chan, cycle, greet, hangs, obj, soft, sum.`
	visibleGhost := `unknown tool "ghost". Tools available to this caller: badjson, big, chan, cycle, greet, hangs, obj, soft, sum.`
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		call    artifact.ToolCall
		content string
		isError bool
		rule    string
	}{
		{"hidden", ctx, call("fails", `{}`), visible, true, "rule-fails"},
		{"missing", ctx, call("ghost", `{}`), visibleGhost, true, ""},
		{"limit", ctx, call("sum", `{"a":1,"b":2}`), "the call to sum was refused: limit reached", true, "rule-sum"},
		{"allowed", ctx, call("greet", `{}`), "hello, world", false, "rule-greet"},
		{"not offered, gate still asked for the span", xtool.WithOffered(ctx, []tool.Tool{{Name: "greet"}}), call("panics", `{}`),
			`unknown tool "panics". Tools available to this caller: greet.`, true, "rule-panics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec.Reset()
			got := h.Execute(tc.ctx, tc.call)
			if got.Content != tc.content || got.IsError != tc.isError {
				t.Errorf("Execute = %q (error %v), want %q (error %v)", got.Content, got.IsError, tc.content, tc.isError)
			}
			spans := rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("%d spans", len(spans))
			}
			var rule string
			for _, kv := range spans[0].Attributes() {
				if kv.Key == "test.rule" {
					rule = kv.Value.AsString()
				}
			}
			if rule != tc.rule {
				t.Errorf("span test.rule = %q, want %q", rule, tc.rule)
			}
		})
	}
	// The hidden refusal is word for word the one a handler without the
	// gate gives for a tool that does not exist, offered the same tools.
	offered := xtool.WithOffered(ctx, []tool.Tool{{Name: "greet"}})
	if a, b := h.Execute(offered, call("fails", `{}`)), plain.Execute(offered, call("ghost", `{}`)); a.Content != `unknown tool "fails". Tools available to this caller: greet.` || b.Content != `unknown tool "ghost". Tools available to this caller: greet.` {
		t.Errorf("hidden %q, missing %q", a.Content, b.Content)
	}
	if want := []string{"viewer/local"}; !reflect.DeepEqual(g.seen[:1], want) {
		t.Errorf("gate saw %v, want %v first", g.seen, want)
	}
}
