package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// defaultFlushWait bounds how long a command waits at exit for its spans
// to reach a collector: a collector that is down must not hold the
// terminal for the exporter's minute of retries.
const defaultFlushWait = 5 * time.Second

// setupTracing returns the tracer the command's loop and handler use: spans
// to stderr with --trace, to an OTLP collector when the standard
// OTEL_EXPORTER_OTLP_* variables name one, and nil — no cost — otherwise.
// The shutdown it returns flushes what is left, within e.flushWait, and
// says on e.stderr when that fails.
func setupTracing(ctx context.Context, e env, toStderr bool) (trace.Tracer, func(context.Context) error, error) {
	var opts []sdktrace.TracerProviderOption
	if toStderr {
		opts = append(opts, sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(&lineExporter{w: e.stderr})))
	}
	exp, endpoint, err := otlpExporter(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	if exp != nil {
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if len(opts) == 0 {
		return nil, func(context.Context) error { return nil }, nil
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return tp.Tracer("github.com/lodeworks/lode/cmd/lode"), flushing(e, "spans", endpoint, tp.Shutdown), nil
}

// flushing returns a shutdown that runs end, which flushes what is left
// of a signal to endpoint, within e.flushWait (defaultFlushWait unless
// set), and says on e.stderr when that fails.
func flushing(e env, what, endpoint string, end func(context.Context) error) func(context.Context) error {
	wait := e.flushWait
	if wait <= 0 {
		wait = defaultFlushWait
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
		defer cancel()
		err := end(ctx)
		if err != nil {
			fmt.Fprintf(e.stderr, "lode: %s not exported to %s within %s: %s\n", what, endpoint, wait, oneLine(err.Error()))
		}
		return err
	}
}

// otlpExporter is the OTLP/HTTP exporter the standard variables ask for,
// or nil. The endpoint and protocol are read here, through e, and given to
// the exporter, which reads the other OTEL_EXPORTER_OTLP_* variables
// (headers, timeout, compression, certificates) itself.
func otlpExporter(ctx context.Context, e env) (exp sdktrace.SpanExporter, endpoint string, err error) {
	endpoint, asJSON, err := otlpTarget(e, "traces")
	if endpoint == "" || err != nil {
		return nil, "", err
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf)}
	if asJSON {
		opts[1] = otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON)
	}
	if exp, err = otlptracehttp.New(ctx, opts...); err != nil {
		return nil, "", fmt.Errorf("OTLP exporter: %w", err)
	}
	return exp, endpoint, nil
}

// otlpTarget reads where the standard OTEL_* variables send a signal
// ("traces", "metrics") and whether as JSON: "" when they send it nowhere
// (no endpoint, OTEL_SDK_DISABLED, OTEL_<SIGNAL>_EXPORTER=none).
func otlpTarget(e env, signal string) (endpoint string, asJSON bool, err error) {
	up := strings.ToUpper(signal)
	if strings.EqualFold(e.getenv("OTEL_SDK_DISABLED"), "true") || e.getenv("OTEL_"+up+"_EXPORTER") == "none" {
		return "", false, nil
	}
	if v := e.getenv("OTEL_EXPORTER_OTLP_" + up + "_ENDPOINT"); v != "" {
		endpoint = v // a signal's own endpoint is used as it is
	} else if v := e.getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		endpoint = strings.TrimRight(v, "/") + "/v1/" + signal
	} else {
		return "", false, nil
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false, fmt.Errorf("OTLP endpoint %q is not an http(s) URL", endpoint)
	}
	name, proto := "OTEL_EXPORTER_OTLP_"+up+"_PROTOCOL", e.getenv("OTEL_EXPORTER_OTLP_"+up+"_PROTOCOL")
	if proto == "" {
		name, proto = "OTEL_EXPORTER_OTLP_PROTOCOL", e.getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "", "http/protobuf":
		return endpoint, false, nil
	case "http/json":
		return endpoint, true, nil
	}
	formats := "http/protobuf or http/json"
	if signal == "metrics" {
		formats = "metrics as http/protobuf" // and http/json for traces only
	}
	return "", false, fmt.Errorf("%s=%s is not supported; lode exports %s", name, proto, formats)
}

// lineExporter writes one line per span: name, duration, status and the
// attributes that say what happened.
type lineExporter struct {
	mu sync.Mutex
	w  io.Writer
}

func (x *lineExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, s := range spans {
		status := "ok"
		if s.Status().Code == codes.Error {
			status = "error"
		}
		attrs := make([]string, 0, len(s.Attributes()))
		for _, kv := range s.Attributes() {
			attrs = append(attrs, fmt.Sprintf("%s=%s", kv.Key, kv.Value.Emit()))
		}
		sort.Strings(attrs)
		fmt.Fprintf(x.w, "span %s %s %s %s\n", s.Name(), s.EndTime().Sub(s.StartTime()).Round(time.Microsecond), status, strings.Join(attrs, " "))
	}
	return nil
}

func (x *lineExporter) Shutdown(context.Context) error { return nil }

// spanLog keeps ended spans in memory, for the demo's trace summary.
type spanLog struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (l *spanLog) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (l *spanLog) OnEnd(s sdktrace.ReadOnlySpan) {
	l.mu.Lock()
	l.spans = append(l.spans, s)
	l.mu.Unlock()
}
func (l *spanLog) Shutdown(context.Context) error   { return nil }
func (l *spanLog) ForceFlush(context.Context) error { return nil }

func (l *spanLog) ended() []sdktrace.ReadOnlySpan {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sdktrace.ReadOnlySpan(nil), l.spans...)
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value.Emit()
		}
	}
	return ""
}
