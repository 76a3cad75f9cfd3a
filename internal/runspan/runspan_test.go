package runspan

import (
	"context"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lodeworks/lode/ledger"
)

func TestOf(t *testing.T) {
	parent := Identity{Conversation: "p", Session: "root", User: "ann", Tenant: "acme", Roles: []string{"editor"}}
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		meta  map[string]string
		want  Identity
		attrs []attribute.KeyValue
	}{
		{"outermost run, no door", context.Background(), nil,
			Identity{Conversation: "t", Session: "t"},
			[]attribute.KeyValue{attribute.String(ConversationAttr, "t"), attribute.String(SessionAttr, "t")}},
		{"outermost run, a door's caller", context.Background(),
			map[string]string{UserKey: "bob", TenantKey: "globex", RolesKey: " admin, ,viewer "},
			Identity{Conversation: "t", Session: "t", User: "bob", Tenant: "globex", Roles: []string{"admin", "viewer"}},
			[]attribute.KeyValue{attribute.String(ConversationAttr, "t"), attribute.String(SessionAttr, "t"),
				attribute.String(UserAttr, "bob"), attribute.StringSlice(RolesAttr, []string{"admin", "viewer"}),
				attribute.String(TenantAttr, "globex")}},
		{"inside a run, nothing written: all inherited but the thread", With(context.Background(), parent), nil,
			Identity{Conversation: "t", Session: "root", User: "ann", Tenant: "acme", Roles: []string{"editor"}},
			[]attribute.KeyValue{attribute.String(ConversationAttr, "t"), attribute.String(SessionAttr, "root"),
				attribute.String(UserAttr, "ann"), attribute.StringSlice(RolesAttr, []string{"editor"}),
				attribute.String(TenantAttr, "acme")}},
		{"inside a run, the thread's own caller wins; blanks inherit", With(context.Background(), parent),
			map[string]string{UserKey: "bob", TenantKey: "", RolesKey: " , "},
			Identity{Conversation: "t", Session: "root", User: "bob", Tenant: "acme", Roles: []string{"editor"}},
			[]attribute.KeyValue{attribute.String(ConversationAttr, "t"), attribute.String(SessionAttr, "root"),
				attribute.String(UserAttr, "bob"), attribute.StringSlice(RolesAttr, []string{"editor"}),
				attribute.String(TenantAttr, "acme")}},
		{"a child's thread names its session", context.Background(), map[string]string{SessionKey: "root"},
			Identity{Conversation: "t", Session: "root"},
			[]attribute.KeyValue{attribute.String(ConversationAttr, "t"), attribute.String(SessionAttr, "root")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := ledger.NewThread(ledger.WithID("t"), ledger.WithMetadata(tc.meta))
			got := Of(tc.ctx, st.ID(), st)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Of = %+v, want %+v", got, tc.want)
			}
			if a := Attributes(With(context.Background(), got)); !reflect.DeepEqual(a, tc.attrs) {
				t.Errorf("Attributes = %v, want %v", a, tc.attrs)
			}
		})
	}
}

func TestNoRunNoAttributes(t *testing.T) {
	if a := Attributes(context.Background()); a != nil {
		t.Errorf("Attributes outside a run = %v", a)
	}
	if _, ok := From(context.Background()); ok {
		t.Error("From found an identity outside a run")
	}
}
