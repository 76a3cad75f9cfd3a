package adaptertest

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
)

// Collect runs one invocation of req on p and splits what it yields into
// deltas and whole artifacts, up to the first error, which it returns.
func Collect(ctx context.Context, p provider.Provider, req *provider.Request) (deltas, arts []artifact.Artifact, err error) {
	for a, e := range p.Invoke(ctx, req) {
		if e != nil {
			return deltas, arts, e
		}
		if artifact.IsDelta(a) {
			deltas = append(deltas, a)
		} else {
			arts = append(arts, a)
		}
	}
	return deltas, arts, nil
}

// Recorder is a tracer whose ended spans the recorder holds.
func Recorder() (*tracetest.SpanRecorder, trace.Tracer) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	return sr, tp.Tracer("test")
}

// Attrs are a span's attributes by key.
func Attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}
