package quarantine_test

import (
	"context"
	"iter"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/guard/quarantine"
	"github.com/lodeworks/lode/x/provider/script"
)

// seeing is a provider that notes the span attributes of the run each
// invocation is made in: what an adapter's chat span would carry.
type seeing struct {
	provider.Provider
	saw []attribute.KeyValue
}

func (p *seeing) Invoke(ctx context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	p.saw = loop.SpanAttributes(ctx)
	return p.Provider.Invoke(ctx, req)
}

// The quarantined model's call, made in a run of its own with none of the
// caller's values, still names the caller's session and user on its spans.
func TestReadKeepsTheCallersIdentity(t *testing.T) {
	caller := auth.Identity{User: "ann", Tenant: "acme", Roles: []string{"editor"}}
	th := ledger.NewThread(ledger.WithID("outer"), ledger.WithMetadata(caller.Metadata()))
	ctx := loop.WithRunIdentity(context.Background(), th)
	prov := &seeing{Provider: script.New([]script.Step{answer(`{"date":"2027-03-14","kind":"conference","title":"Lisbon Go Days"}`)})}
	if _, err := quarantine.Read[Event](ctx, prov, "When and what is the event?", page); err != nil {
		t.Fatal(err)
	}
	got := map[attribute.Key]string{}
	for _, kv := range prov.saw {
		got[kv.Key] = kv.Value.Emit()
	}
	for k, v := range map[attribute.Key]string{"session.id": "outer", "user.id": "ann", "lode.tenant": "acme", "user.roles": `["editor"]`} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if got["gen_ai.conversation.id"] == "" {
		t.Errorf("no conversation named: %v", got)
	}
}
