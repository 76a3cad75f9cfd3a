package tool

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/internal/runspan"
)

func toolType(remote bool) string {
	// GenAI conventions: "function" runs in the client, "extension" on the
	// agent's side through an external service.
	if remote {
		return "extension"
	}
	return "function"
}

// attrText makes text the model wrote fit a span or metric attribute:
// exporters refuse strings that are not valid UTF-8 (OTLP drops the whole
// batch), and a name a model invents may be of any length.
func attrText(s string) string {
	const limit = 128
	if len(s) > limit {
		s = s[:runeStart(s, limit)] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// otherTool stands for every name the registry does not hold, in metrics,
// whose series a model must not be able to multiply (the OpenTelemetry
// conventions' "_OTHER").
const otherTool = "_OTHER"

// hiddenAttr is set on the span of a call refused because it named a tool
// the caller may not use. The caller's result, the error.type and the
// metric read exactly as for a tool that does not exist; this attribute is
// how the operator tells the two apart.
const hiddenAttr = "lode.tool.hidden"

func (h *Handler) startSpan(ctx context.Context, call artifact.ToolCall) (context.Context, trace.Span) {
	if h.tracer == nil {
		return ctx, nil
	}
	name := attrText(call.Name)
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", name),
		attribute.String("gen_ai.tool.call.id", attrText(call.ID)),
	}
	if cc := capture.From(ctx); cc.On {
		attrs = append(attrs, attribute.String("gen_ai.tool.call.arguments", cc.Attr(capture.Arguments(call.Arguments))))
	}
	return h.tracer.Start(ctx, "execute_tool "+name,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...),
		trace.WithAttributes(runspan.Attributes(ctx)...))
}

// endSpan ends span, recording res as gen_ai.tool.call.result when
// capture is on; with a capture.Hold in ctx (the loop's result guards
// have yet to judge res), both wait for its verdict, and a result a guard
// stopped is never recorded.
func endSpan(ctx context.Context, span trace.Span, res artifact.ToolResult) {
	cc := capture.From(ctx)
	if !cc.On {
		span.End()
		return
	}
	result := cc.Attr(res.Content)
	if h := capture.HoldOf(ctx); h != nil {
		end := time.Now()
		h.Add(func(pass bool) {
			if pass {
				span.SetAttributes(attribute.String("gen_ai.tool.call.result", result))
			}
			span.End(trace.WithTimestamp(end))
		})
		return
	}
	span.SetAttributes(attribute.String("gen_ai.tool.call.result", result))
	span.End()
}

func (h *Handler) finish(ctx context.Context, span trace.Span, res artifact.ToolResult, o outcome, start time.Time) {
	if span != nil {
		span.SetAttributes(attribute.String("gen_ai.tool.type", toolType(o.remote)))
		if o.hidden {
			span.SetAttributes(attribute.Bool(hiddenAttr, true))
		}
		span.SetAttributes(o.attrs...)
		approvalAttrs(span, o)
		if o.errType != "" {
			span.SetAttributes(attribute.String("error.type", o.errType))
			msg := o.errType
			if o.err != nil {
				msg = attrText(o.err.Error())
				span.RecordError(o.err)
			}
			if o.stack != nil {
				span.AddEvent("panic", trace.WithAttributes(attribute.String("exception.stacktrace", string(o.stack))))
			}
			span.SetStatus(codes.Error, msg)
		}
		endSpan(ctx, span, res)
	}
	if h.duration != nil {
		name := otherTool
		if o.tool != nil {
			name = o.tool.Name
		}
		attrs := []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", name),
			attribute.String("gen_ai.tool.type", toolType(o.remote)),
		}
		if o.errType != "" {
			attrs = append(attrs, attribute.String("error.type", o.errType))
		}
		h.duration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}
}
