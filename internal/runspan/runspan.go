// Package runspan carries whose run a span belongs to, from the loop that
// knows it to every package that starts a span inside the run.
//
// The loop puts an Identity in the run's context (With); a package that
// starts a span (a provider adapter's chat span, x/tool's execute_tool, a
// fallback attempt, the MCP server) adds Attributes(ctx) to it. Nothing is
// global: the identity lives in the context, so concurrent runs of
// different threads, users and tenants never see each other's, and a span
// started outside any run gets none.
//
// It is a context value rather than OpenTelemetry baggage on purpose:
// baggage is sent on with every outgoing request an instrumented client
// makes (a model provider, a third-party MCP server), and a user's or
// tenant's name is not for them. Only the conversation ID crosses a
// process, explicitly (x/tool/mcp's _meta).
package runspan

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lodeworks/lode/ledger"
)

// Thread metadata keys a door writes for its caller (x/auth.UserKey,
// TenantKey, RolesKey); x/auth's tests pin them to these.
const (
	UserKey   = "lode.user"
	TenantKey = "tenant"
	RolesKey  = "role"
)

// SessionKey is the thread metadata key of the session a thread belongs
// to when it is not its own: x/agent and x/temporal write it on a child
// agent's thread (as x/agent.MetaSession), so that the child's spans name
// its caller's session in any process, on any worker, however late it is
// resumed.
const SessionKey = "lode.session"

// Span attribute keys. ConversationAttr and SessionAttr name the thread:
// the GenAI conventions read gen_ai.conversation.id; Langfuse and Phoenix
// (OpenInference) build their session views from session.id and their
// user views from user.id. user.roles is the registry's own; no
// convention names a tenant.
const (
	ConversationAttr = "gen_ai.conversation.id"
	SessionAttr      = "session.id"
	UserAttr         = "user.id"
	RolesAttr        = "user.roles"
	TenantAttr       = "lode.tenant"
)

// Identity is whose run a span belongs to.
type Identity struct {
	// Conversation is the run's own thread.
	Conversation string
	// Session is the thread of the outermost run: a child agent's spans
	// keep its caller's, so one conversation is one session however many
	// agents answered in it.
	Session      string
	User, Tenant string
	Roles        []string
}

type key struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id Identity) context.Context {
	return &idCtx{Context: ctx, id: id}
}

// idCtx carries an Identity in one allocation, where context.WithValue
// would take a second to box it.
type idCtx struct {
	context.Context
	id Identity
}

func (c *idCtx) Value(k any) any {
	if _, ok := k.(key); ok {
		return &c.id
	}
	return c.Context.Value(k)
}

// From returns the Identity ctx carries.
func From(ctx context.Context) (Identity, bool) {
	if id, ok := ctx.Value(key{}).(*Identity); ok {
		return *id, true
	}
	return Identity{}, false
}

// Of is the Identity of a run of st (whose ID is thread) inside ctx: the
// caller's user, tenant and roles from st's metadata, each inherited from
// ctx's Identity when st has none (a child agent's thread, a thread a
// door did not write); the session st's metadata names (SessionKey), or
// else ctx's Identity's, or else thread. It may panic as st's methods do.
func Of(ctx context.Context, thread string, st ledger.State) Identity {
	parent, _ := From(ctx)
	id := Identity{Conversation: thread, Session: meta(st, SessionKey, parent.Session)}
	if id.Session == "" {
		id.Session = thread
	}
	id.User = meta(st, UserKey, parent.User)
	id.Tenant = meta(st, TenantKey, parent.Tenant)
	v, _ := st.Metadata(RolesKey)
	if id.Roles = splitRoles(v); id.Roles == nil {
		id.Roles = parent.Roles
	}
	return id
}

func meta(st ledger.State, k, def string) string {
	if v, ok := st.Metadata(k); ok && v != "" {
		return v
	}
	return def
}

func splitRoles(v string) []string {
	var out []string
	for r := range strings.SplitSeq(v, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// Attributes are the span attributes of ctx's Identity, in a fixed
// order, leaving out what is empty; nil outside a run.
func Attributes(ctx context.Context) []attribute.KeyValue {
	id, ok := From(ctx)
	if !ok {
		return nil
	}
	return id.Attributes()
}

// Attributes are the span attributes of id, leaving out what is empty.
func (id Identity) Attributes() []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 5)
	if id.Conversation != "" {
		attrs = append(attrs, attribute.String(ConversationAttr, id.Conversation))
	}
	if id.Session != "" {
		attrs = append(attrs, attribute.String(SessionAttr, id.Session))
	}
	if id.User != "" {
		attrs = append(attrs, attribute.String(UserAttr, id.User))
	}
	if len(id.Roles) > 0 {
		attrs = append(attrs, attribute.StringSlice(RolesAttr, id.Roles))
	}
	if id.Tenant != "" {
		attrs = append(attrs, attribute.String(TenantAttr, id.Tenant))
	}
	return attrs
}
