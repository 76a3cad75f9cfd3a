package tool_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// WithCapture records the content of calls whose context turns none on,
// scrubbed; a context's own Config wins over the handler's.
func TestWithCapture(t *testing.T) {
	const secret = "sk-live-5f3a9c0e7d21"
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "echo", "Echo", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return "echo: " + in.Text, nil
	}); err != nil {
		t.Fatal(err)
	}
	on := capture.Config{On: true, Secrets: []string{secret}}
	cases := []struct {
		name     string
		handler  []xtool.HandlerOption
		ctx      func(context.Context) context.Context
		captured bool
	}{
		{"off", nil, nil, false},
		{"by the handler", []xtool.HandlerOption{xtool.WithCapture(on)}, nil, true},
		{"by the context", nil, func(ctx context.Context) context.Context { return capture.With(ctx, on) }, true},
		{"the handler's off leaves the context's", []xtool.HandlerOption{xtool.WithCapture(capture.Config{})},
			func(ctx context.Context) context.Context { return capture.With(ctx, on) }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			h := xtool.NewHandler(reg, append(c.handler, xtool.WithTracer(tp.Tracer("test")))...)
			ctx := context.Background()
			if c.ctx != nil {
				ctx = c.ctx(ctx)
			}
			res := h.Execute(ctx, artifact.ToolCall{ID: "c1", Name: "echo", Arguments: `{"text":"hi ` + secret + `"}`})
			if !strings.Contains(res.Content, secret) {
				t.Fatalf("the result itself lost its text: %q", res.Content)
			}
			spans := rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			attrs := map[string]string{}
			for _, kv := range spans[0].Attributes() {
				attrs[string(kv.Key)] = kv.Value.Emit()
			}
			args, result := attrs["gen_ai.tool.call.arguments"], attrs["gen_ai.tool.call.result"]
			if !c.captured {
				if args != "" || result != "" {
					t.Fatalf("captured with capture off: %q, %q", args, result)
				}
				return
			}
			if !strings.Contains(args, "hi ") || !strings.Contains(result, "echo: hi ") {
				t.Errorf("arguments %q, result %q: want the call's", args, result)
			}
			if strings.Contains(args+result, secret) {
				t.Errorf("the secret was recorded: %q, %q", args, result)
			}
		})
	}
}

// The ToolContentEvent observers get of a call the loop runs holds what
// the call's execute_tool span records, byte for byte.
func TestToolContentEventIsTheSpans(t *testing.T) {
	const secret = "sk-live-0c1d2e3f4a5b"
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "echo", "Echo", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return "echo: " + in.Text + " " + strings.Repeat("y", 300), nil
	}); err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var mu sync.Mutex
	var got []loop.ToolContentEvent
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if ev, ok := ev.(loop.ToolContentEvent); ok {
			mu.Lock()
			got = append(got, ev)
			mu.Unlock()
		}
	})
	step := loop.New(loop.WithCapture(capture.Config{On: true, MaxBytes: 200, Secrets: []string{secret}}),
		loop.WithObserver(obs), loop.WithHandlers(xtool.NewHandler(reg, xtool.WithTracer(tp.Tracer("test")))),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "echo"})
	prov := script.Play(
		script.Reply(artifact.ToolCall{ID: "c1", Name: "echo", Arguments: `{"text":"hi ` + secret + `"}`}),
		script.Text("done"))
	ctx := t.Context()
	if _, err := step.Run(ctx, th, prov); err != nil {
		t.Fatal(err)
	}
	if err := step.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 1 || len(got) != 1 {
		t.Fatalf("%d spans and %d events, want 1 of each", len(spans), len(got))
	}
	attrs := map[string]string{}
	for _, kv := range spans[0].Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	ev := got[0]
	if ev.Arguments != attrs["gen_ai.tool.call.arguments"] || ev.Result != attrs["gen_ai.tool.call.result"] {
		t.Errorf("event %q, %q\nspan  %q, %q", ev.Arguments, ev.Result, attrs["gen_ai.tool.call.arguments"], attrs["gen_ai.tool.call.result"])
	}
	if strings.Contains(ev.Arguments+ev.Result, secret) || !strings.Contains(ev.Result, "…[truncated ") {
		t.Errorf("event %q, %q: want the secret scrubbed and the result cut", ev.Arguments, ev.Result)
	}
}
