package genaispan_test

import (
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
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
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
