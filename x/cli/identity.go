package cli

import (
	"flag"
	"fmt"
	"os/user"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/auth"
)

// identityNotes is the part of the help of lode run, chat and resume that
// says whose a thread is.
const identityNotes = `Identity: a new thread carries who started it: the user running lode (the
operating system's login), --tenant and --role (the thread's metadata lode.user,
tenant and role; the policy's tenants: and roles: limits bind by them). A stored
thread keeps its tenant: --tenant with another tenant than the thread's is
refused, and without --tenant the thread's own goes on.
`

// registerTenant adds --tenant, the organisation the caller acts for.
func (o *options) registerTenant(fs *flag.FlagSet) {
	fs.StringVar(&o.tenant, "tenant", "", "the tenant the caller acts for, written on a new thread (the policy's tenants: limits bind by it); a stored thread keeps its own")
}

// identity is the caller of a command run by hand: the operating system's
// login, --tenant and --role. At the command line the login is the only
// authentication there is; the tenant and roles are what the person says.
func (o *options) identity() auth.Identity {
	return auth.Identity{User: loginName(), Tenant: o.tenant, Roles: auth.SplitRoles(o.role)}
}

// loginName is the name of the user running lode; "" when the system
// cannot say.
func loginName() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	return u.Username
}

// newThreadMeta is what a command writes on a thread it creates: the
// caller's identity, without the keys that hold nothing.
func newThreadMeta(id auth.Identity) map[string]string {
	meta := id.Metadata()
	for k, v := range meta {
		if v == "" {
			delete(meta, k)
		}
	}
	return meta
}

// checkTenant refuses to go on with st for a caller that gave a tenant
// (--tenant) other than the thread's: a thread never changes tenant.
// Without one, the caller goes on with the thread's.
func checkTenant(st ledger.State, tenant string) error {
	if tenant == "" {
		return nil
	}
	have, _ := st.Metadata(auth.TenantKey)
	if have == tenant {
		return nil
	}
	if have == "" {
		return fmt.Errorf("thread %s has no tenant, and --tenant %s would give it one: a thread cannot change tenant (leave --tenant out to go on with it, or start a new thread)", st.ID(), tenant)
	}
	return fmt.Errorf("thread %s belongs to tenant %s, not %s: a thread cannot change tenant (leave --tenant out, or give --tenant %s)", st.ID(), have, tenant, have)
}
