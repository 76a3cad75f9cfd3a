package auth_test

import (
	"fmt"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/auth"
)

func TestMetadataRoundTrip(t *testing.T) {
	cases := []auth.Identity{
		{},
		{User: "alice", Tenant: "acme", Roles: []string{"viewer", "editor"}},
		{User: "bob", Roles: []string{"admin"}},
	}
	for _, id := range cases {
		got := auth.Of(ledger.NewThread(ledger.WithMetadata(id.Metadata())))
		if fmt.Sprint(got) != fmt.Sprint(id) {
			t.Errorf("Of(Metadata(%+v)) = %+v", id, got)
		}
	}
	if got := auth.Of(nil); got.User != "" || got.Tenant != "" || got.Roles != nil {
		t.Errorf("Of(nil) = %+v, want zero", got)
	}
}

func ExampleIdentity_Metadata() {
	id := auth.Identity{User: "alice", Tenant: "acme", Roles: []string{"viewer"}}
	st := ledger.NewThread(ledger.WithMetadata(id.Metadata()))
	fmt.Printf("%+v\n", auth.Of(st))
	// Output: {User:alice Tenant:acme Roles:[viewer]}
}
