package genaispan_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
	xtool "github.com/lodeworks/lode/x/tool"
)

// BenchmarkCaptureTurn is one loop turn through the openai adapter against
// a local server streaming a 200-byte answer to a 1 KB message and a
// system prompt, with spans recorded (and dropped by a no-op exporter),
// content capture off and on.
func BenchmarkCaptureTurn(b *testing.B) {
	answer := strings.Repeat("All clear. ", 18)
	srv := httptest.NewServer(openaitest.Text(answer))
	defer srv.Close()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	p, err := openai.New(openai.WithModel("gpt-test"), openai.WithAPIKey("test-key"),
		openai.WithBaseURL(srv.URL+"/v1"), openai.WithEnv(func(string) string { return "" }),
		openai.WithTracer(tp.Tracer("openai")))
	if err != nil {
		b.Fatal(err)
	}
	prompt := strings.Repeat("Please look at the plan. ", 40)
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			step := loop.New(loop.WithTracer(tp.Tracer("loop")),
				loop.WithCapture(capture.Config{On: on, Secrets: []string{secret}}),
				loop.WithInvokeOptions(provider.WithSystemPrompt("Answer in one line.")))
			b.ReportAllocs()
			for b.Loop() {
				th := ledger.NewThread()
				_ = th.Append(ledger.RoleUser, artifact.Text{Content: prompt})
				if _, err := step.Run(b.Context(), th, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkToolRun is one run of two turns (a call of "lookup", whose
// result is 1 KB, then a 200-byte answer) through the openai adapter
// against a local server and x/tool's handler, every span recorded (and
// dropped by a no-op exporter): six spans, each naming the run. It
// measures what naming the caller on every span adds (a thread a door
// wrote a user, tenant and roles on, against one naming none), what
// capture adds to the spans, and what it adds to an observer's events (a
// ContentEvent per answer, a ToolContentEvent per call): the last case
// against the one with an observer and capture off.
func BenchmarkToolRun(b *testing.B) {
	answer := strings.Repeat("All clear. ", 18)
	call := openaitest.Call("call_1", "lookup", `{"q":"plan"}`)
	text := openaitest.Text(answer)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"role":"tool"`)) {
			text(w, r)
			return
		}
		call(w, r)
	}))
	defer srv.Close()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	p, err := openai.New(openai.WithModel("gpt-test"), openai.WithAPIKey("test-key"),
		openai.WithBaseURL(srv.URL+"/v1"), openai.WithEnv(func(string) string { return "" }),
		openai.WithTracer(tp.Tracer("openai")))
	if err != nil {
		b.Fatal(err)
	}
	reg := tool.NewRegistry()
	result := strings.Repeat("The plan is on track. ", 46)
	if err := reg.Register(tool.Tool{Name: "lookup", Description: "Look a plan up"},
		func(context.Context, tool.Sandbox, map[string]any) (any, error) { return result, nil }); err != nil {
		b.Fatal(err)
	}
	caller := map[string]string{"lode.user": "ann@example.com", "tenant": "acme", "role": "editor,viewer"}
	cases := []struct {
		name     string
		meta     map[string]string
		capture  bool
		observer bool
	}{
		{"thread", nil, false, false},
		{"caller", caller, false, false},
		{"caller+capture", caller, true, false},
		{"caller+observer", caller, false, true},
		{"caller+capture+observer", caller, true, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			opts := []loop.Option{loop.WithTracer(tp.Tracer("loop")),
				loop.WithCapture(capture.Config{On: c.capture, Secrets: []string{secret}}),
				loop.WithHandlers(xtool.NewHandler(reg, xtool.WithTracer(tp.Tracer("tool")))),
				loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil), provider.WithSystemPrompt("Answer in one line."))}
			events := 0
			if c.observer {
				opts = append(opts, loop.WithObserver(loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
					switch ev.(type) {
					case loop.ContentEvent, loop.ToolContentEvent:
						events++
					}
				})))
			}
			step := loop.New(opts...)
			b.ReportAllocs()
			for b.Loop() {
				th := ledger.NewThread()
				for k, v := range c.meta {
					_ = th.SetMetadata(k, v)
				}
				_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Read me the plan."})
				if _, err := step.Run(b.Context(), th, p); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := step.Flush(b.Context()); err != nil {
				b.Fatal(err)
			}
			if c.observer && c.capture && events == 0 {
				b.Fatal("no content events")
			}
		})
	}
}
