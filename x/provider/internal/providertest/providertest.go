package providertest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
)

// Collect runs one invocation of req to its end and returns its deltas and
// its whole artifacts apart, with the first error.
func Collect(p provider.Provider, req *provider.Request) (deltas, whole []artifact.Artifact, err error) {
	return CollectContext(context.Background(), p, req)
}

// CollectContext is Collect under ctx.
func CollectContext(ctx context.Context, p provider.Provider, req *provider.Request) (deltas, whole []artifact.Artifact, err error) {
	for a, e := range p.Invoke(ctx, req) {
		if e != nil {
			return deltas, whole, e
		}
		if artifact.IsDelta(a) {
			deltas = append(deltas, a)
		} else {
			whole = append(whole, a)
		}
	}
	return deltas, whole, nil
}

// Dig walks a value decoded from JSON: a string steps into an object, an
// int into an array. What is not there is nil.
func Dig(v any, path ...any) any {
	for _, step := range path {
		switch k := step.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k < 0 || k >= len(a) {
				return nil
			}
			v = a[k]
		default:
			return nil
		}
	}
	return v
}

// Recorder is a tracer whose ended spans the recorder holds.
func Recorder() (*tracetest.SpanRecorder, trace.Tracer) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	return sr, tp.Tracer("test")
}

// Attributes are a span's attributes by key.
func Attributes(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value)
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// ErrorType is a span's error.type, "" when it has none.
func ErrorType(s sdktrace.ReadOnlySpan) string {
	return Attributes(s)["error.type"].AsString()
}

// RoundTripFunc is an http.RoundTripper that calls itself.
type RoundTripFunc func(*http.Request) (*http.Response, error)

func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BytesClient answers every request with a 200 carrying body as
// contentType, from memory; it reads and closes what is sent.
func BytesClient(contentType string, body []byte) *http.Client {
	return &http.Client{Transport: RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		return &http.Response{
			StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {contentType}},
			Body:   io.NopCloser(bytes.NewReader(body)), Request: r,
		}, nil
	})}
}

// StreamClient is BytesClient for a body that is an event stream.
func StreamClient(body []byte) *http.Client { return BytesClient("text/event-stream", body) }

// Answer is one canned answer of a fake API.
type Answer struct {
	// Status is the HTTP status; 0 means 200.
	Status int
	Header map[string]string
	// ContentType, when set, wins over a Content-Type in Header.
	ContentType string
	Body        string
	// Partial announces more bytes than Body, so that the client sees the
	// connection cut after it.
	Partial bool
}

// Write sends a to w.
func (a Answer) Write(w http.ResponseWriter) {
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	if a.ContentType != "" {
		w.Header().Set("Content-Type", a.ContentType)
	}
	if a.Partial {
		w.Header().Set("Content-Length", strconv.Itoa(len(a.Body)+100))
	}
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	io.WriteString(w, a.Body)
}
