package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/loop"
	xtool "github.com/lodeworks/lode/x/tool"
)

// setupMetrics returns the meter the command's loop and tool handler
// record into (tokens, dollars, tool durations: loop.WithMeter,
// xtool.WithMeter), exporting to an OTLP collector when the standard
// OTEL_EXPORTER_OTLP_* variables name one for metrics, every
// OTEL_METRIC_EXPORT_INTERVAL milliseconds (60,000 unless set) and at
// exit; nil, which records nothing, otherwise. The exporter speaks
// http/protobuf only: OTEL_EXPORTER_OTLP_PROTOCOL=http/json, which traces
// follow, leaves metrics on protobuf, which a collector's OTLP/HTTP
// receiver takes on the same port. The shutdown flushes what is left, as
// setupTracing's does.
func setupMetrics(ctx context.Context, e env) (metric.Meter, func(context.Context) error, error) {
	none := func(context.Context) error { return nil }
	endpoint, _, err := otlpTarget(e, "metrics")
	if endpoint == "" || err != nil {
		return nil, none, err
	}
	if p := e.getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"); p == "http/json" {
		return nil, none, fmt.Errorf("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=%s is not supported; lode exports metrics as http/protobuf", p)
	}
	interval := time.Minute
	if v := e.getenv("OTEL_METRIC_EXPORT_INTERVAL"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, none, fmt.Errorf("OTEL_METRIC_EXPORT_INTERVAL=%s: want a positive number of milliseconds", v)
		}
		interval = time.Duration(ms) * time.Millisecond
	}
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, none, fmt.Errorf("OTLP metric exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval))))
	return mp.Meter("github.com/lodeworks/lode/cmd/lode"), flushing(e, "metrics", endpoint, mp.Shutdown), nil
}

// telemetry is where a command's spans and metrics go; nil fields record
// nothing.
type telemetry struct {
	tracer trace.Tracer
	meter  metric.Meter
}

// setupTelemetry is setupTracing and setupMetrics; the shutdown flushes
// both.
func setupTelemetry(ctx context.Context, e env, toStderr bool) (telemetry, func(context.Context) error, error) {
	tracer, endTraces, err := setupTracing(ctx, e, toStderr)
	if err != nil {
		return telemetry{}, nil, err
	}
	meter, endMetrics, err := setupMetrics(ctx, e)
	if err != nil {
		_ = endTraces(ctx)
		return telemetry{}, nil, err
	}
	return telemetry{tracer: tracer, meter: meter}, func(ctx context.Context) error {
		return errors.Join(endTraces(ctx), endMetrics(ctx))
	}, nil
}

// options are the handler's and the loop's options that record into t.
func (t telemetry) options() ([]xtool.HandlerOption, []loop.Option) {
	var h []xtool.HandlerOption
	var l []loop.Option
	if t.tracer != nil {
		h = append(h, xtool.WithTracer(t.tracer))
		l = append(l, loop.WithTracer(t.tracer))
	}
	if t.meter != nil {
		h = append(h, xtool.WithMeter(t.meter))
		l = append(l, loop.WithMeter(t.meter))
	}
	return h, l
}
