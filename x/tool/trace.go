package tool

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
)

func toolType(remote bool) string {
	// GenAI conventions: "function" runs in the client, "extension" on the
	// agent's side through an external service.
	if remote {
		return "extension"
	}
	return "function"
}

func (h *Handler) startSpan(ctx context.Context, call artifact.ToolCall) (context.Context, trace.Span) {
	if h.tracer == nil {
		return ctx, nil
	}
	return h.tracer.Start(ctx, "execute_tool "+call.Name,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", call.Name),
			attribute.String("gen_ai.tool.call.id", call.ID),
		))
}

func (h *Handler) finish(ctx context.Context, span trace.Span, call artifact.ToolCall, o outcome, d time.Duration) {
	if span != nil {
		span.SetAttributes(attribute.String("gen_ai.tool.type", toolType(o.remote)))
		if o.errType != "" {
			span.SetAttributes(attribute.String("error.type", o.errType))
			msg := o.errType
			if o.err != nil {
				msg = o.err.Error()
				span.RecordError(o.err)
			}
			if o.stack != nil {
				span.AddEvent("panic", trace.WithAttributes(attribute.String("exception.stacktrace", string(o.stack))))
			}
			span.SetStatus(codes.Error, msg)
		}
		span.End()
	}
	if h.duration != nil {
		attrs := []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", call.Name),
			attribute.String("gen_ai.tool.type", toolType(o.remote)),
		}
		if o.errType != "" {
			attrs = append(attrs, attribute.String("error.type", o.errType))
		}
		h.duration.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
	}
}
