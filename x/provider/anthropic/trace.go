package anthropic

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/genaispan"
)

// chatSpan is the "chat {model}" span of one invocation.
type chatSpan struct {
	span trace.Span
}

func (p *Provider) startSpan(ctx context.Context, req *provider.Request) (context.Context, *chatSpan) {
	ctx, span := genaispan.Start(ctx, p.tracer, genaispan.Call{
		Provider: "anthropic", Model: p.model, ServerAddr: p.serverAddr, ServerPort: p.serverPort,
	}, req)
	return ctx, &chatSpan{span: span}
}

func (s *chatSpan) end(res *result, err error) {
	r := genaispan.Result{CacheTokens: true}
	if res != nil {
		r.Model, r.ID, r.Finish, r.Usage = res.model, res.id, res.finish, res.usage
	}
	if err == errStopped {
		err = nil
	}
	genaispan.End(s.span, r, err, errorType)
}
