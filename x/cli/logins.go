package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/auth"
)

// TokenConfig grants an identity — a user, a tenant, roles — to the HTTP
// callers that present one bearer token (or the page's session cookie it
// was traded for). The token itself comes from an environment variable or
// a file, never from lode.yaml.
type TokenConfig struct {
	// User names the holder; empty names it by a hash prefix of the token
	// (auth.TokenUser). Threads belong to the user that created them.
	User string `yaml:"user"`
	// Tenant is the organisation the holder acts for: the policy's
	// tenants: limits bind by it.
	Tenant string   `yaml:"tenant"`
	Roles  []string `yaml:"roles"`
	// Env names the variable that holds the token.
	Env string `yaml:"env"`
	// File names a file that holds the token (surrounding blanks dropped),
	// relative to lode.yaml's folder.
	File string `yaml:"file"`
}

// ProxyConfig is the proxy: section: an authenticating proxy in front of
// lode web or serve --http, whose headers name the caller. They are read
// only from the proxy's addresses.
type ProxyConfig struct {
	// Addresses are the proxy's IPs or CIDR prefixes, matched against the
	// TCP peer of each request (never X-Forwarded-For).
	Addresses []string `yaml:"addresses"`
	// UserHeader, EmailHeader and GroupsHeader name the headers the proxy
	// sets; empty means X-Forwarded-User, X-Forwarded-Email and
	// X-Forwarded-Groups.
	UserHeader   string `yaml:"user_header"`
	EmailHeader  string `yaml:"email_header"`
	GroupsHeader string `yaml:"groups_header"`
	// Users and Groups grant roles and a tenant by user and by group.
	Users  map[string]GrantConfig `yaml:"users"`
	Groups map[string]GrantConfig `yaml:"groups"`
}

// GrantConfig is what a proxy's user or group is given.
type GrantConfig struct {
	Roles  []string `yaml:"roles"`
	Tenant string   `yaml:"tenant"`
}

// SessionsConfig is the sessions: section: the cookie lode web's page
// trades a token for.
type SessionsConfig struct {
	// TTL is how long a login lasts; 0 means auth.DefaultSessionTTL.
	TTL Duration `yaml:"ttl"`
	// Secure marks the cookie Secure even when lode web is reached over
	// plain HTTP, as it is behind a proxy that ends TLS.
	Secure bool `yaml:"secure"`
	// KeyEnv names a variable whose value is mixed into the key that signs
	// the cookies: changing it logs everyone out. Without it the key is
	// derived from each token, which every replica given the same tokens
	// derives alike.
	KeyEnv string `yaml:"key_env"`
}

// checkLogins refuses a proxy: or sessions: section that cannot work, by
// line.
func checkLogins(cfg *Config, f *fileLines) error {
	p := cfg.Proxy
	if _, given := f.lines["proxy"]; given && len(p.Addresses) == 0 {
		return fmt.Errorf("%s: proxy: needs addresses: the IPs or CIDR prefixes lode is reached from through the proxy (its headers are trusted from there only)", f.at("proxy"))
	}
	for _, a := range p.Addresses {
		if _, err := auth.ParsePrefix(a); err != nil {
			return fmt.Errorf("%s: proxy.addresses: %q is not an IP or CIDR prefix (write e.g. 10.0.0.5 or 10.0.0.0/8)", f.at("proxy.addresses"), a)
		}
	}
	if cfg.Sessions.TTL < 0 {
		return fmt.Errorf("%s: sessions.ttl must not be negative (0 means the default, %s)", f.at("sessions.ttl"), auth.DefaultSessionTTL)
	}
	if _, given := f.lines["sessions"]; given && len(cfg.Tokens) == 0 {
		return fmt.Errorf("%s: sessions: sets the page's login, which trades a token: add tokens:", f.at("sessions"))
	}
	return nil
}

// logins are the credentials a door checks: tokens:, the page's sessions
// and proxy:, chained in that order.
type logins struct {
	tokens   *auth.Tokens
	sessions *auth.Sessions
	proxy    *auth.Proxy
	authn    auth.Authenticator
}

// loginsOf builds the credentials lode.yaml configures for an HTTP door,
// or nil when it configures none. The page's sessions (web only) keep
// their logouts in counter, where every replica sharing the store sees
// them.
func loginsOf(e env, cfg *Config, web bool, counter ledger.Counter) (*logins, error) {
	l := &logins{}
	var err error
	if l.tokens, err = tokensOf(e, cfg); err != nil {
		return nil, err
	}
	if len(cfg.Proxy.Addresses) > 0 {
		pc := auth.ProxyConfig{
			Trusted:    cfg.Proxy.Addresses,
			UserHeader: cfg.Proxy.UserHeader, EmailHeader: cfg.Proxy.EmailHeader, GroupsHeader: cfg.Proxy.GroupsHeader,
			Users: grants(cfg.Proxy.Users), Groups: grants(cfg.Proxy.Groups),
		}
		if l.proxy, err = auth.NewProxy(pc); err != nil {
			return nil, fmt.Errorf("%s: proxy: %w", cfg.file.at("proxy"), err)
		}
	}
	if l.tokens == nil && l.proxy == nil {
		return nil, nil
	}
	var chain []auth.Authenticator
	if l.tokens != nil {
		chain = append(chain, l.tokens)
		if web {
			opts := []auth.SessionOption{auth.WithSessionTTL(time.Duration(cfg.Sessions.TTL)), auth.WithRevocations(counter)}
			if cfg.Sessions.Secure {
				opts = append(opts, auth.WithSecureCookie())
			}
			if k := cfg.Sessions.KeyEnv; k != "" {
				v := e.getenv(k)
				if v == "" {
					return nil, fmt.Errorf("%s: the variable %s that should hold the session key is empty or unset", cfg.file.at("sessions.key_env"), k)
				}
				opts = append(opts, auth.WithSessionKey([]byte(v)))
			}
			if l.sessions, err = auth.NewSessions(l.tokens, opts...); err != nil {
				return nil, fmt.Errorf("%s: sessions: %w", cfg.file.at("sessions"), err)
			}
			chain = append(chain, l.sessions)
		}
	}
	if l.proxy != nil {
		chain = append(chain, l.proxy)
	}
	l.authn = auth.Chain(chain...)
	return l, nil
}

func grants(m map[string]GrantConfig) map[string]auth.Grant {
	out := make(map[string]auth.Grant, len(m))
	for k, g := range m {
		out[k] = auth.Grant{Roles: g.Roles, Tenant: g.Tenant}
	}
	return out
}

// identify is what an MCP server's WithIdentify takes: the caller's
// Identity as a thread's metadata (user, tenant, roles), so the policy's
// roles and tenant limits bind at lode serve as at every door.
func (l *logins) identify(r *http.Request) (ledger.State, error) {
	id, err := l.authn.Authenticate(r)
	if err != nil {
		return nil, err
	}
	return ledger.NewThread(ledger.WithMetadata(id.Metadata())), nil
}

// what names the configured credentials, for messages.
func (l *logins) what() string {
	var names []string
	if l.tokens != nil {
		names = append(names, "tokens:")
	}
	if l.proxy != nil {
		names = append(names, "proxy:")
	}
	sort.Strings(names)
	return strings.Join(names, " and ")
}

// tokensOf reads the tokens: section, each token from its variable or
// file; nil without one.
func tokensOf(e env, cfg *Config) (*auth.Tokens, error) {
	if len(cfg.Tokens) == 0 {
		return nil, nil
	}
	var list []auth.Token
	seen := map[string]bool{}
	for i, tc := range cfg.Tokens {
		at := cfg.file.at(fmt.Sprintf("tokens[%d]", i))
		var tok, from string
		switch {
		case tc.Env != "" && tc.File != "":
			return nil, fmt.Errorf("%s: a token comes from env: or file:, not both", at)
		case tc.Env != "":
			if tok = e.getenv(tc.Env); tok == "" {
				return nil, fmt.Errorf("%s: the variable %s that should hold the token is empty or unset", at, tc.Env)
			}
			from = "the variable " + tc.Env
		case tc.File != "":
			path := tc.File
			if !filepath.IsAbs(path) && cfg.file != nil {
				path = filepath.Join(filepath.Dir(cfg.file.name), path)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("%s: token file: %w", at, err)
			}
			if tok = strings.TrimSpace(string(b)); tok == "" {
				return nil, fmt.Errorf("%s: the token file %s is empty", at, tc.File)
			}
			from = "the file " + tc.File
		default:
			return nil, fmt.Errorf("%s: a token needs env: VARIABLE or file: PATH (the token itself never goes in lode.yaml)", at)
		}
		if seen[tok] {
			return nil, fmt.Errorf("%s: the same token is granted twice", at)
		}
		seen[tok] = true
		if len(tok) < auth.MinTokenBytes {
			return nil, fmt.Errorf("%s: the token in %s has %d bytes: give at least %d (e.g. openssl rand -hex 32)", at, from, len(tok), auth.MinTokenBytes)
		}
		list = append(list, auth.Token{Secret: tok, Identity: auth.Identity{User: tc.User, Tenant: tc.Tenant, Roles: tc.Roles}})
	}
	return auth.NewTokens(list...)
}
