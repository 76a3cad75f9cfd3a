package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/internal/runspan"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/auth"
	xtool "github.com/lodeworks/lode/x/tool"
)

// identityKeys are the attributes that say whose run a span belongs to.
var identityKeys = []attribute.Key{"gen_ai.conversation.id", "session.id", "user.id", "user.roles", "lode.tenant"}

// identityOf is the identity part of s's attributes, as text.
func identityOf(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	out := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		if slices.Contains(identityKeys, kv.Key) {
			out[kv.Key] = kv.Value.Emit()
		}
	}
	return out
}

// Every span of a run, in every package that makes one (the loop's run
// and turns, the adapter's chat spans, x/tool's execute_tool, a child
// agent's whole run), is in one trace and names the conversation, the
// session and the caller a door wrote on the thread. A child agent's
// spans name its own thread as the conversation and its caller's as the
// session, so Langfuse and Phoenix show the child's work in the caller's
// session.
func TestEverySpanOfARunNamesItsConversationAndCaller(t *testing.T) {
	w := newWire(t,
		`call:research {"task":"look into go"}`, // 0 top
		"found: go",                             // 1 research
		"done",                                  // 2 top
	)
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	prov := w.provider(t, tracer)
	reg := tool.NewRegistry()
	mustRegister(t, reg, mustNew(t, "research", agent.WithProvider(prov), agent.WithTracer(tracer)))

	caller := auth.Identity{User: "ann", Tenant: "acme", Roles: []string{"editor", "viewer"}}
	top := ledger.NewThread(ledger.WithID("top"), ledger.WithMetadata(caller.Metadata()))
	if err := top.Append(ledger.RoleUser, artifact.Text{Content: "research go"}); err != nil {
		t.Fatal(err)
	}
	step := loop.New(loop.WithTracer(tracer), loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
		loop.WithHandlers(xtool.NewHandler(reg, xtool.WithTracer(tracer))))
	if _, err := step.Run(context.Background(), top, prov); err != nil {
		t.Fatal(err)
	}
	child, _ := top.Metadata(agent.MetaChildPrefix + "call_0")
	if child == "" {
		t.Fatal("top thread does not link its child")
	}

	callerAttrs := map[attribute.Key]string{"user.id": "ann", "user.roles": `["editor","viewer"]`, "lode.tenant": "acme"}
	in := func(conv string) map[attribute.Key]string {
		m := map[attribute.Key]string{"gen_ai.conversation.id": conv, "session.id": "top"}
		for k, v := range callerAttrs {
			m[k] = v
		}
		return m
	}
	spans := rec.Ended()
	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID().String()] = s
	}
	// conversationOf is the thread of the nearest invoke_agent span at or
	// above s: which run s belongs to by the tree.
	conversationOf := func(s sdktrace.ReadOnlySpan) string {
		for p := s; p != nil; p = byID[p.Parent().SpanID().String()] {
			if p.Name() == "invoke_agent lode" {
				if p.Parent().IsValid() {
					return child
				}
				return "top"
			}
		}
		return "none"
	}
	var got []string
	for _, s := range spans {
		conv := conversationOf(s)
		got = append(got, s.Name()+" in "+conv)
		if s.SpanContext().TraceID() != spans[0].SpanContext().TraceID() {
			t.Errorf("span %q is in trace %s, not %s", s.Name(), s.SpanContext().TraceID(), spans[0].SpanContext().TraceID())
		}
		want := in(conv)
		if id := identityOf(s); !mapsEqual(id, want) {
			t.Errorf("span %q (%s): identity %v, want %v", s.Name(), conv, id, want)
		}
	}
	slices.Sort(got)
	want := []string{
		"chat gpt-test in " + child,
		"chat gpt-test in top", "chat gpt-test in top",
		"execute_tool research in top",
		"invoke_agent lode in " + child,
		"invoke_agent lode in top",
		"lode.turn in " + child,
		"lode.turn in top", "lode.turn in top",
	}
	slices.Sort(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("spans:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func mapsEqual(a, b map[attribute.Key]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The loop reads a child's session by this key, by string: it may not
// import this package.
func TestSessionKeyIsTheLoops(t *testing.T) {
	if agent.MetaSession != runspan.SessionKey {
		t.Errorf("x/agent writes %q, the loop's spans read %q", agent.MetaSession, runspan.SessionKey)
	}
}
