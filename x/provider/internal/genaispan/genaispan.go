// Package genaispan records the "chat {model}" span of one model call
// after the OpenTelemetry GenAI conventions, the same way for every
// adapter.
package genaispan

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/internal/runspan"
	"github.com/lodeworks/lode/provider"
)

// Call is what a span says about the call before it is made.
type Call struct {
	// Provider is gen_ai.provider.name ("openai", "anthropic").
	Provider   string
	Model      string
	ServerAddr string
	ServerPort int
}

// Port is the server.port of a base URL: its own, or the scheme's.
func Port(u *url.URL) int {
	if n, err := strconv.Atoi(u.Port()); err == nil {
		return n
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// Start opens the span of a call of req.
func Start(ctx context.Context, tracer trace.Tracer, c Call, req *provider.Request) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", c.Provider),
		attribute.String("gen_ai.request.model", c.Model),
		attribute.String("server.address", c.ServerAddr),
		attribute.Int("server.port", c.ServerPort),
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.request.max_tokens", req.MaxTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, attribute.Float64("gen_ai.request.temperature", *req.Temperature))
	}
	if req.TopP != nil {
		attrs = append(attrs, attribute.Float64("gen_ai.request.top_p", *req.TopP))
	}
	if len(req.Stop) > 0 {
		attrs = append(attrs, attribute.StringSlice("gen_ai.request.stop_sequences", req.Stop))
	}
	if cc := capture.From(ctx); cc.On {
		system, msgs := capture.Input(req.Turns)
		if len(system) > 0 {
			attrs = append(attrs, attribute.String("gen_ai.system_instructions", cc.Attr(system)))
		}
		if msgs == nil {
			msgs = []capture.Message{}
		}
		attrs = append(attrs, attribute.String("gen_ai.input.messages", cc.Attr(msgs)))
	}
	return tracer.Start(ctx, "chat "+c.Model,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...),
		trace.WithAttributes(runspan.Attributes(ctx)...))
}

// Result is what the call learned; the adapters fill it as they read the
// answer.
type Result struct {
	Model, ID, Finish string
	Usage             *artifact.Usage
	// CacheTokens records the prompt cache's read and write counts of
	// Usage, for an API that reports both.
	CacheTokens bool
}

// End records r (nil when the call learned nothing) and, when err is not
// nil, the failure, then ends span. With capture on in ctx, a call that
// succeeded also records out, the whole artifacts it yielded, as
// gen_ai.output.messages; when ctx holds a capture.Hold, that output and
// the span's end wait for the Hold's release (the span keeps the time the
// call ended), and output a guard stopped is dropped.
// The status description and error.type are both errorType(err), a value
// from the adapter's closed set: raw error text can carry a prompt or a
// key and makes every failure its own group.
func End(ctx context.Context, span trace.Span, r *Result, err error, errorType func(error) string, out []artifact.Artifact) {
	cc := capture.From(ctx)
	var output string
	if cc.On && err == nil {
		output = cc.Attr([]capture.Message{capture.Output(out)})
	}
	if h := capture.HoldOf(ctx); h != nil && output != "" {
		end := time.Now()
		defer h.Add(func(pass bool) {
			if pass {
				span.SetAttributes(attribute.String("gen_ai.output.messages", output))
			}
			span.End(trace.WithTimestamp(end))
		})
	} else {
		if output != "" {
			span.SetAttributes(attribute.String("gen_ai.output.messages", output))
		}
		defer span.End()
	}
	if r != nil {
		r.record(span)
	}
	if err != nil {
		kind := errorType(err)
		span.RecordError(err)
		span.SetStatus(codes.Error, kind)
		span.SetAttributes(attribute.String("error.type", kind))
	}
}

func (r *Result) record(span trace.Span) {
	if r.Model != "" {
		span.SetAttributes(attribute.String("gen_ai.response.model", r.Model))
	}
	if r.ID != "" {
		span.SetAttributes(attribute.String("gen_ai.response.id", r.ID))
	}
	if r.Finish != "" {
		span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{r.Finish}))
	}
	if u := r.Usage; u != nil {
		span.SetAttributes(
			attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens),
		)
		if r.CacheTokens {
			span.SetAttributes(
				attribute.Int64("gen_ai.usage.cache_read.input_tokens", u.CachedInputTokens),
				attribute.Int64("gen_ai.usage.cache_creation.input_tokens", u.CacheWriteTokens),
			)
		}
	}
}
