package runspan_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/internal/runspan"
)

// BenchmarkSpanIdentity is what naming the run costs one span: a span of
// x/tool's shape (three GenAI attributes) started and ended with the SDK,
// recorded and dropped by a no-op exporter, outside any run, in a run of
// a thread that names no caller (conversation and session), and in a run
// of one that does (user, roles and tenant too).
func BenchmarkSpanIdentity(b *testing.B) {
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter())).Tracer("bench")
	base := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", "lookup"),
		attribute.String("gen_ai.tool.call.id", "call_1"),
	}
	cases := []struct {
		name string
		ctx  context.Context
	}{
		{"none", context.Background()},
		{"thread", runspan.With(context.Background(), runspan.Identity{Conversation: "th-01J9Z3", Session: "th-01J9Z3"})},
		{"caller", runspan.With(context.Background(), runspan.Identity{Conversation: "th-01J9Z3", Session: "th-01J9Z3",
			User: "ann@example.com", Tenant: "acme", Roles: []string{"editor", "viewer"}})},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, span := tracer.Start(c.ctx, "execute_tool lookup", trace.WithAttributes(base...),
					trace.WithAttributes(runspan.Attributes(c.ctx)...))
				span.End()
			}
		})
	}
}
