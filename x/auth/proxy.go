package auth

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// Headers an authenticating proxy sets, by default.
const (
	DefaultUserHeader   = "X-Forwarded-User"
	DefaultEmailHeader  = "X-Forwarded-Email"
	DefaultGroupsHeader = "X-Forwarded-Groups"
)

// Grant is what a proxy's user or group is given: roles, and a tenant.
type Grant struct {
	Tenant string
	Roles  []string
}

// ProxyConfig says which proxies are trusted to name the caller, in which
// headers, and what each user and group is granted.
type ProxyConfig struct {
	// Trusted are the proxies' addresses: IPs or CIDR prefixes
	// ("10.0.0.5", "10.1.0.0/16", "::1"). Only a request whose TCP peer
	// (http.Request.RemoteAddr, never X-Forwarded-For) is one of them
	// has its headers read. At least one is needed.
	Trusted []string
	// UserHeader names the user; "" means DefaultUserHeader.
	UserHeader string
	// EmailHeader names the user when UserHeader is empty or absent; ""
	// means DefaultEmailHeader.
	EmailHeader string
	// GroupsHeader lists the user's groups, comma-separated (or
	// repeated); "" means DefaultGroupsHeader.
	GroupsHeader string
	// Users grant roles and a tenant by user name; Groups by group.
	// A user gets the roles of its entry and of every group it is in.
	// Its tenant is its own entry's, else its groups': when they name
	// two, the request is refused. A user known to neither is
	// authenticated with no roles and no tenant.
	Users  map[string]Grant
	Groups map[string]Grant
}

// Proxy authenticates requests by the headers of an authenticating proxy
// (oauth2-proxy, an identity-aware load balancer) that sits in front of
// the server: it trusts those headers only from the proxy's addresses.
// From any other peer they are ignored, and the request is
// unauthenticated. A Proxy is safe for concurrent use.
type Proxy struct {
	trusted             []netip.Prefix
	user, email, groups string
	users, groupsByName map[string]Grant
}

// NewProxy checks cfg and returns its Proxy; every problem is returned,
// each wrapping ErrOption.
func NewProxy(cfg ProxyConfig) (*Proxy, error) {
	p := &Proxy{
		user:   headerOr(cfg.UserHeader, DefaultUserHeader),
		email:  headerOr(cfg.EmailHeader, DefaultEmailHeader),
		groups: headerOr(cfg.GroupsHeader, DefaultGroupsHeader),
		users:  cloneGrants(cfg.Users), groupsByName: cloneGrants(cfg.Groups),
	}
	var errs []error
	if len(cfg.Trusted) == 0 {
		errs = append(errs, fmt.Errorf("%w: a proxy needs the addresses it is reached from (Trusted)", ErrOption))
	}
	for _, a := range cfg.Trusted {
		pre, err := ParsePrefix(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.trusted = append(p.trusted, pre)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// ParsePrefix reads a trusted proxy address: an IP ("10.0.0.5", "::1"),
// which stands for itself alone, or a CIDR prefix ("10.0.0.0/8").
func ParsePrefix(a string) (netip.Prefix, error) {
	a = strings.TrimSpace(a)
	if strings.Contains(a, "/") {
		pre, err := netip.ParsePrefix(a)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%w: proxy address %q is not an IP or CIDR prefix (write e.g. 10.0.0.5 or 10.0.0.0/8)", ErrOption, a)
		}
		return pre.Masked(), nil
	}
	ip, err := netip.ParseAddr(a)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%w: proxy address %q is not an IP or CIDR prefix (write e.g. 10.0.0.5 or 10.0.0.0/8)", ErrOption, a)
	}
	ip = ip.Unmap()
	return netip.PrefixFrom(ip, ip.BitLen()), nil
}

func headerOr(h, def string) string {
	if strings.TrimSpace(h) == "" {
		return def
	}
	return http.CanonicalHeaderKey(strings.TrimSpace(h))
}

func cloneGrants(m map[string]Grant) map[string]Grant {
	out := make(map[string]Grant, len(m))
	for k, g := range m {
		out[k] = Grant{Tenant: g.Tenant, Roles: slices.Clone(g.Roles)}
	}
	return out
}

// Trusts reports whether the TCP peer of r is one of the proxy's
// addresses.
func (p *Proxy) Trusts(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return false
	}
	ip = ip.Unmap().WithZone("")
	for _, pre := range p.trusted {
		if pre.Contains(ip) {
			return true
		}
	}
	return false
}

// Authenticate returns the Identity the proxy's headers name, when the
// request comes from a trusted address and names a user; otherwise
// ErrUnauthenticated, whatever headers it carries.
func (p *Proxy) Authenticate(r *http.Request) (Identity, error) {
	if !p.Trusts(r) {
		return Identity{}, ErrUnauthenticated
	}
	user := strings.TrimSpace(r.Header.Get(p.user))
	if user == "" {
		user = strings.TrimSpace(r.Header.Get(p.email))
	}
	if user == "" {
		return Identity{}, ErrUnauthenticated
	}
	id := Identity{User: user}
	var groups []string
	for _, v := range r.Header.Values(p.groups) {
		for g := range strings.SplitSeq(v, ",") {
			if g = strings.TrimSpace(g); g != "" {
				groups = append(groups, g)
			}
		}
	}
	sort.Strings(groups)
	groups = slices.Compact(groups)
	own, hasOwn := p.users[user]
	id.Roles = append(id.Roles, own.Roles...)
	tenants := map[string]bool{}
	for _, g := range groups {
		gr, ok := p.groupsByName[g]
		if !ok {
			continue
		}
		id.Roles = append(id.Roles, gr.Roles...)
		if gr.Tenant != "" {
			tenants[gr.Tenant] = true
		}
	}
	switch {
	case hasOwn && own.Tenant != "":
		id.Tenant = own.Tenant
	case len(tenants) == 1:
		for t := range tenants {
			id.Tenant = t
		}
	case len(tenants) > 1:
		names := make([]string, 0, len(tenants))
		for t := range tenants {
			names = append(names, t)
		}
		sort.Strings(names)
		return Identity{}, fmt.Errorf("%w: the groups of %q name the tenants %s: give the user a tenant of its own", ErrUnauthenticated, user, strings.Join(names, " and "))
	}
	sort.Strings(id.Roles)
	id.Roles = slices.Compact(id.Roles)
	return id, nil
}
