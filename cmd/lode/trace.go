package main

import (
	"context"
	"fmt"
	"io"
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

// setupTracing returns the tracer the command's loop and handler use: spans
// to stderr with --trace, to an OTLP collector when the standard
// OTEL_EXPORTER_OTLP_* variables name one, and nil — no cost — otherwise.
func setupTracing(ctx context.Context, e env, toStderr bool) (trace.Tracer, func(context.Context) error, error) {
	var opts []sdktrace.TracerProviderOption
	if toStderr {
		opts = append(opts, sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(&lineExporter{w: e.stderr})))
	}
	if e.getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || e.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		proto := e.getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
		if proto == "" {
			proto = e.getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
		}
		if proto != "" && proto != "http/protobuf" {
			return nil, nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported; lode exports http/protobuf", proto)
		}
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("OTLP exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if len(opts) == 0 {
		return nil, func(context.Context) error { return nil }, nil
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return tp.Tracer("github.com/lodeworks/lode/cmd/lode"), tp.Shutdown, nil
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
