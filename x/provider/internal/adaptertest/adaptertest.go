package adaptertest

import (
	"bytes"
	"context"
	"io"
	"net/http"

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

// RoundTripFunc is a function as an http.RoundTripper.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// StreamClient answers every request, in memory, with a 200 whose body is
// body as an event stream; it reads and closes the request's body.
func StreamClient(body []byte) *http.Client {
	return &http.Client{Transport: RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		return &http.Response{
			StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body:   io.NopCloser(bytes.NewReader(body)), Request: r,
		}, nil
	})}
}
