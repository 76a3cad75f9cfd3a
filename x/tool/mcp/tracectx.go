package mcp

import (
	"context"
	"maps"
	"reflect"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/internal/runspan"
)

// traceProp reads and writes W3C trace context and baggage under the _meta
// keys MCP reserves for them (SEP-414): "traceparent", "tracestate" and
// "baggage", unprefixed. They travel in the message itself, so a trace
// crosses stdio as well as HTTP, whatever propagator the application set
// globally.
var traceProp = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// metaCarrier is a propagation.TextMapCarrier over a request's _meta, whose
// values a peer may have sent as anything: only strings are read.
type metaCarrier sdk.Meta

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// The _meta keys that carry the conversation a request is made in, so the
// server's spans name it as the caller's do (gen_ai.conversation.id,
// session.id). Only the thread IDs cross: the caller's user, tenant and
// roles are not the server's to know; its own door authenticates callers.
const (
	conversationMeta = "lode/conversation.id"
	sessionMeta      = "lode/session.id"
)

// traceMeta returns the _meta of an outgoing request from ctx: the trace
// context of ctx's span and the conversation of ctx's run, or nil when
// ctx has no span (an untraced request is sent as it was written, so a
// recorded session replays).
func traceMeta(ctx context.Context) sdk.Meta {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	m := sdk.Meta{}
	traceProp.Inject(ctx, metaCarrier(m))
	id, _ := runspan.From(ctx)
	if id.Conversation != "" {
		m[conversationMeta] = id.Conversation
	}
	if id.Session != "" {
		m[sessionMeta] = id.Session
	}
	return m
}

// traceOutgoing is the server's sending middleware: the requests a served
// tool makes of the client (sampling, elicitation, roots) carry the trace
// context of the call that made them, so the client can continue the trace
// in turn. Keys the request's _meta already has are left as they are.
func traceOutgoing(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		p := req.GetParams()
		if p == nil {
			return next(ctx, method, req)
		}
		if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
			return next(ctx, method, req)
		}
		if tm := traceMeta(ctx); tm != nil {
			meta := maps.Clone(p.GetMeta())
			if meta == nil {
				meta = map[string]any{}
			}
			for k, v := range tm {
				if _, ok := meta[k]; !ok {
					meta[k] = v
				}
			}
			p.SetMeta(meta)
		}
		return next(ctx, method, req)
	}
}

// continueTrace returns ctx carrying the remote trace context req's _meta
// names, so that the server's spans join the caller's trace. A request
// without one, or with a malformed one, leaves ctx as it is.
func continueTrace(ctx context.Context, req sdk.Request) context.Context {
	p := req.GetParams()
	if p == nil {
		return ctx
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return ctx
	}
	meta := p.GetMeta()
	if len(meta) == 0 {
		return ctx
	}
	if c := metaCarrier(meta).Get(conversationMeta); c != "" {
		s := metaCarrier(meta).Get(sessionMeta)
		if s == "" {
			s = c
		}
		ctx = runspan.With(ctx, runspan.Identity{Conversation: c, Session: s})
	}
	return traceProp.Extract(ctx, metaCarrier(meta))
}
