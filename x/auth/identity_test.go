package auth_test

import (
	"fmt"
	"testing"

	"github.com/lodeworks/lode/internal/runspan"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/auth"
)

// The loop reads the caller for its spans by these keys, by string: it
// may not import this package.
func TestSpanIdentityReadsTheseKeys(t *testing.T) {
	for _, k := range []struct{ auth, loop string }{
		{auth.UserKey, runspan.UserKey},
		{auth.TenantKey, runspan.TenantKey},
		{auth.RolesKey, runspan.RolesKey},
	} {
		if k.auth != k.loop {
			t.Errorf("x/auth writes %q, the loop's spans read %q", k.auth, k.loop)
		}
	}
}

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
