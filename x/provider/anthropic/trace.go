package anthropic

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/provider"
)

// chatSpan is the "chat {model}" span of one invocation.
type chatSpan struct {
	span trace.Span
}

func (p *Provider) startSpan(ctx context.Context, req *provider.Request) (context.Context, *chatSpan) {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", "anthropic"),
		attribute.String("gen_ai.request.model", p.model),
		attribute.String("server.address", p.serverAddr),
		attribute.Int("server.port", p.serverPort),
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
	ctx, span := p.tracer.Start(ctx, "chat "+p.model,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, &chatSpan{span: span}
}

func (s *chatSpan) end(res *result, err error) {
	defer s.span.End()
	if res != nil {
		if res.model != "" {
			s.span.SetAttributes(attribute.String("gen_ai.response.model", res.model))
		}
		if res.id != "" {
			s.span.SetAttributes(attribute.String("gen_ai.response.id", res.id))
		}
		if res.finish != "" {
			s.span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{res.finish}))
		}
		if u := res.usage; u != nil {
			s.span.SetAttributes(
				attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens),
				attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens),
				attribute.Int64("gen_ai.usage.cache_read.input_tokens", u.CachedInputTokens),
				attribute.Int64("gen_ai.usage.cache_creation.input_tokens", u.CacheWriteTokens),
			)
		}
	}
	if err != nil && err != errStopped {
		s.span.RecordError(err)
		s.span.SetStatus(codes.Error, errorType(err))
		s.span.SetAttributes(attribute.String("error.type", errorType(err)))
	}
}
