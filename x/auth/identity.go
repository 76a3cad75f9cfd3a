package auth

import (
	"errors"
	"net/http"
	"strings"

	"github.com/lodeworks/lode/ledger"
)

// Thread metadata keys a door writes from the caller's Identity. RolesKey
// and TenantKey are the keys x/policy reads; x/conduit/web writes the same.
const (
	// UserKey holds Identity.User.
	UserKey = "lode.user"
	// TenantKey holds Identity.Tenant; x/policy's tenants: limits read it.
	TenantKey = "tenant"
	// RolesKey holds Identity.Roles, comma-separated.
	RolesKey = "role"
)

// ErrUnauthenticated is what an Authenticator returns for a request that
// carries no credentials it knows; HTTP doors answer it with 401.
var ErrUnauthenticated = errors.New("auth: no valid credentials")

// Identity is who a caller is, as authentication decided it: never as a
// request body or a model said. The zero Identity is the anonymous caller
// of a door that authenticates nobody (loopback, one person).
type Identity struct {
	// User names the person or client; threads a door creates belong to
	// it.
	User string
	// Tenant is the organisation the user acts for; x/policy's tenants:
	// limits bind by it.
	Tenant string
	// Roles are what x/policy decides by.
	Roles []string
}

// Authenticator finds the Identity of an HTTP request. A request without
// credentials it knows gets an error that matches ErrUnauthenticated.
type Authenticator interface {
	Authenticate(r *http.Request) (Identity, error)
}

// AuthenticatorFunc adapts a function to an Authenticator.
type AuthenticatorFunc func(r *http.Request) (Identity, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (Identity, error) { return f(r) }

// Metadata is what a door writes on a thread for id: its user, tenant and
// roles under UserKey, TenantKey and RolesKey. Every key is present, so
// writing it over a thread's metadata leaves no value of another caller.
func (id Identity) Metadata() map[string]string {
	return map[string]string{UserKey: id.User, TenantKey: id.Tenant, RolesKey: strings.Join(id.Roles, ",")}
}

// Of reads back the Identity a door wrote on st. A nil st is the zero
// Identity.
func Of(st ledger.State) Identity {
	if st == nil {
		return Identity{}
	}
	var id Identity
	id.User, _ = st.Metadata(UserKey)
	id.Tenant, _ = st.Metadata(TenantKey)
	v, _ := st.Metadata(RolesKey)
	id.Roles = SplitRoles(v)
	return id
}

// SplitRoles reads a comma-separated list of roles, dropping blanks.
func SplitRoles(v string) []string {
	var out []string
	for r := range strings.SplitSeq(v, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}
