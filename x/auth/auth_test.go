package auth_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/x/auth"
)

const (
	aliceSecret = "alice-secret-token"
	bobSecret   = "bob-secret-token"
)

func tokens(t *testing.T, grants ...auth.Token) *auth.Tokens {
	t.Helper()
	if grants == nil {
		grants = []auth.Token{
			{Secret: aliceSecret, Identity: auth.Identity{User: "alice", Tenant: "acme", Roles: []string{"editor"}}},
			{Secret: bobSecret, Identity: auth.Identity{Roles: []string{"viewer"}}},
		}
	}
	ts, err := auth.NewTokens(grants...)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func request(header ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/api/info", nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

func TestTokens(t *testing.T) {
	ts := tokens(t)
	for _, c := range []struct {
		name, auth string
		want       string // fmt of the Identity, or "unauthenticated"
	}{
		{"none", "", "unauthenticated"},
		{"empty bearer", "Bearer ", "unauthenticated"},
		{"basic", "Basic " + aliceSecret, "unauthenticated"},
		{"unknown", "Bearer nobody-knows-this", "unauthenticated"},
		{"a prefix of a token", "Bearer alice-secret", "unauthenticated"},
		{"alice", "Bearer " + aliceSecret, "{User:alice Tenant:acme Roles:[editor]}"},
		{"bob, named by his token's hash", "Bearer " + bobSecret, fmt.Sprintf("{User:%s Tenant: Roles:[viewer]}", auth.TokenUser(bobSecret))},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := request()
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			id, err := ts.Authenticate(r)
			got := fmt.Sprintf("%+v", id)
			if err != nil {
				if !errors.Is(err, auth.ErrUnauthenticated) {
					t.Fatalf("error %v does not match ErrUnauthenticated", err)
				}
				got = "unauthenticated"
			}
			if got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
	if u := auth.TokenUser(bobSecret); !strings.HasPrefix(u, "token:") || len(u) != len("token:")+12 || strings.Contains(u, bobSecret) {
		t.Errorf("TokenUser = %q", u)
	}
}

func TestNewTokensRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		grants []auth.Token
		want   string
	}{
		{"blank", []auth.Token{{Secret: "  "}}, "auth: invalid option: token 0 is blank"},
		{"short", []auth.Token{{Secret: "1234567"}}, "auth: invalid option: token 0 has 7 bytes: give at least 8 (e.g. openssl rand -hex 32)"},
		{"twice", []auth.Token{{Secret: aliceSecret}, {Secret: aliceSecret}}, "auth: invalid option: token 1 is given twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := auth.NewTokens(c.grants...)
			if err == nil || err.Error() != c.want || !errors.Is(err, auth.ErrOption) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// clock is a settable clock for sessions.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// login logs in with secret and returns the cookie set.
func login(t *testing.T, s *auth.Sessions, r *http.Request, secret string) *http.Cookie {
	t.Helper()
	w := httptest.NewRecorder()
	if _, err := s.Login(w, r, secret); err != nil {
		t.Fatalf("login: %v", err)
	}
	cs := w.Result().Cookies()
	if len(cs) != 1 {
		t.Fatalf("login set %d cookies", len(cs))
	}
	return cs[0]
}

func withCookie(c *http.Cookie) *http.Request {
	r := request()
	r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	return r
}

func TestSessionCookie(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)}
	s, err := auth.NewSessions(tokens(t), auth.WithSessionClock(clk.Now), auth.WithSessionTTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	c := login(t, s, request(), aliceSecret)
	if c.Name != auth.CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || c.MaxAge != 3600 {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP, Max-Age 3600", c)
	}
	if strings.Contains(c.Value, aliceSecret) || strings.Contains(c.Value, "alice") {
		t.Errorf("the cookie %q carries the token or the user", c.Value)
	}
	tlsReq := request()
	tlsReq.TLS = &tls.ConnectionState{}
	if c := login(t, s, tlsReq, aliceSecret); !c.Secure {
		t.Errorf("a login over TLS set a cookie that is not Secure")
	}
	forced, err := auth.NewSessions(tokens(t), auth.WithSecureCookie())
	if err != nil {
		t.Fatal(err)
	}
	if c := login(t, forced, request(), aliceSecret); !c.Secure {
		t.Errorf("WithSecureCookie set a cookie that is not Secure")
	}
	if _, err := s.Login(httptest.NewRecorder(), request(), "wrong-secret"); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("login with a wrong token: %v", err)
	}

	id, err := s.Authenticate(withCookie(c))
	if err != nil || fmt.Sprintf("%+v", id) != "{User:alice Tenant:acme Roles:[editor]}" {
		t.Fatalf("Authenticate = %+v, %v", id, err)
	}
	clk.Add(59 * time.Minute)
	if _, err := s.Authenticate(withCookie(c)); err != nil {
		t.Errorf("a minute before expiry: %v", err)
	}
	clk.Add(time.Minute)
	if _, err := s.Authenticate(withCookie(c)); !errors.Is(err, auth.ErrSessionEnded) || !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("at expiry: %v, want ErrSessionEnded", err)
	}
}

func TestForgedCookies(t *testing.T) {
	s, err := auth.NewSessions(tokens(t))
	if err != nil {
		t.Fatal(err)
	}
	good := login(t, s, request(), bobSecret).Value
	parts := strings.Split(good, ".")
	other, err := auth.NewSessions(tokens(t, auth.Token{Secret: "another-servers-token"}))
	if err != nil {
		t.Fatal(err)
	}
	foreign := login(t, other, request(), "another-servers-token").Value
	flip := func(s string) string {
		b := []byte(s)
		if b[0] == 'a' {
			b[0] = 'b'
		} else {
			b[0] = 'a'
		}
		return string(b)
	}
	for _, c := range []struct{ name, value string }{
		{"empty", ""},
		{"garbage", "not-a-cookie"},
		{"later expiry", strings.Join([]string{parts[0], parts[1], "99999999999", parts[3]}, ".")},
		{"another session ID", strings.Join([]string{parts[0], flip(parts[1]), parts[2], parts[3]}, ".")},
		{"altered signature", strings.Join([]string{parts[0], parts[1], parts[2], flip(parts[3])}, ".")},
		{"no signature", strings.Join(parts[:3], ".")},
		{"another version", strings.Join([]string{"v2", parts[1], parts[2], parts[3]}, ".")},
		{"signed by a token this server lacks", foreign},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, err := s.Authenticate(withCookie(&http.Cookie{Name: auth.CookieName, Value: c.value}))
			if !errors.Is(err, auth.ErrUnauthenticated) {
				t.Errorf("Authenticate = %+v, %v; want ErrUnauthenticated", id, err)
			}
		})
	}
}

func TestLogoutRevokesOnEveryReplica(t *testing.T) {
	dir := t.TempDir()
	open := func() ledger.Counter {
		st, err := file.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a, err := auth.NewSessions(tokens(t), auth.WithRevocations(open()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := auth.NewSessions(tokens(t), auth.WithRevocations(open()))
	if err != nil {
		t.Fatal(err)
	}
	c := login(t, a, request(), aliceSecret)
	kept := login(t, a, request(), aliceSecret)
	for name, s := range map[string]*auth.Sessions{"a": a, "b": b} {
		if _, err := s.Authenticate(withCookie(c)); err != nil {
			t.Fatalf("replica %s before the logout: %v", name, err)
		}
	}
	w := httptest.NewRecorder()
	if err := b.Logout(w, withCookie(c)); err != nil {
		t.Fatal(err)
	}
	cleared := w.Result().Cookies()
	if len(cleared) != 1 || cleared[0].Name != auth.CookieName || cleared[0].MaxAge >= 0 || cleared[0].Value != "" {
		t.Errorf("logout set %+v, want the cookie cleared", cleared)
	}
	for name, s := range map[string]*auth.Sessions{"a": a, "b": b} {
		if _, err := s.Authenticate(withCookie(c)); !errors.Is(err, auth.ErrSessionEnded) {
			t.Errorf("replica %s, the cookie replayed after its logout: %v, want ErrSessionEnded", name, err)
		}
		if _, err := s.Authenticate(withCookie(kept)); err != nil {
			t.Errorf("replica %s, another session of the same token: %v", name, err)
		}
	}
	// A process started after the logout, over the same store, agrees.
	late, err := auth.NewSessions(tokens(t), auth.WithRevocations(open()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := late.Authenticate(withCookie(c)); !errors.Is(err, auth.ErrSessionEnded) {
		t.Errorf("a later process: %v, want ErrSessionEnded", err)
	}
	n, _, err := open().AddCounter(context.Background(), auth.RevokedCounterPrefix+strings.Split(c.Value, ".")[1], 0, ledger.NoLimit)
	if err != nil || n != 1 {
		t.Errorf("revocation counter = %d, %v", n, err)
	}
	// Without shared counters the logout holds in its own process.
	solo, err := auth.NewSessions(tokens(t))
	if err != nil {
		t.Fatal(err)
	}
	c = login(t, solo, request(), aliceSecret)
	if err := solo.Logout(httptest.NewRecorder(), withCookie(c)); err != nil {
		t.Fatal(err)
	}
	if _, err := solo.Authenticate(withCookie(c)); !errors.Is(err, auth.ErrSessionEnded) {
		t.Errorf("replayed in the same process: %v", err)
	}
}

// A cookie stops working once its token leaves the configuration, and
// keeps working when other tokens change; a new session key ends all.
func TestSessionsFollowTheTokens(t *testing.T) {
	before, err := auth.NewSessions(tokens(t))
	if err != nil {
		t.Fatal(err)
	}
	alice := login(t, before, request(), aliceSecret)
	bob := login(t, before, request(), bobSecret)
	after, err := auth.NewSessions(tokens(t,
		auth.Token{Secret: bobSecret, Identity: auth.Identity{User: "bob", Roles: []string{"admin"}}},
		auth.Token{Secret: "a-new-token-for-carol"}))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := after.Authenticate(withCookie(alice)); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("the cookie of a removed token: %+v, %v", id, err)
	}
	if id, err := after.Authenticate(withCookie(bob)); err != nil || fmt.Sprintf("%+v", id) != "{User:bob Tenant: Roles:[admin]}" {
		t.Errorf("bob's cookie after his grant changed: %+v, %v; want his new grant", id, err)
	}
	keyed, err := auth.NewSessions(tokens(t), auth.WithSessionKey([]byte("key one")))
	if err != nil {
		t.Fatal(err)
	}
	c := login(t, keyed, request(), bobSecret)
	rotated, err := auth.NewSessions(tokens(t), auth.WithSessionKey([]byte("key two")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyed.Authenticate(withCookie(c)); err != nil {
		t.Errorf("same key: %v", err)
	}
	if _, err := rotated.Authenticate(withCookie(c)); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("rotated key: %v, want ErrUnauthenticated", err)
	}
}

func TestNewSessionsRefuses(t *testing.T) {
	_, err := auth.NewSessions(nil, auth.WithSessionTTL(-time.Second), auth.WithSessionKey(nil))
	want := "auth: invalid option: WithSessionTTL(-1s): want 0 (default) or more\n" +
		"auth: invalid option: WithSessionKey: the key is empty\n" +
		"auth: invalid option: NewSessions: no Tokens to log in with"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func TestProxy(t *testing.T) {
	p, err := auth.NewProxy(auth.ProxyConfig{
		Trusted: []string{"10.0.0.5", "192.168.1.0/24", "::1"},
		Users:   map[string]auth.Grant{"alice": {Tenant: "acme", Roles: []string{"admin"}}},
		Groups: map[string]auth.Grant{
			"staff":   {Roles: []string{"viewer"}},
			"globex":  {Tenant: "globex", Roles: []string{"editor"}},
			"initech": {Tenant: "initech"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, peer string
		header     []string
		want       string
	}{
		{"trusted, user and groups", "10.0.0.5:4000", []string{"X-Forwarded-User", "bob", "X-Forwarded-Groups", "staff, globex"}, "{User:bob Tenant:globex Roles:[editor viewer]}"},
		{"a user's own tenant wins", "192.168.1.77:1", []string{"X-Forwarded-User", "alice", "X-Forwarded-Groups", "globex"}, "{User:alice Tenant:acme Roles:[admin editor]}"},
		{"email when no user", "[::1]:9", []string{"X-Forwarded-Email", "carol@example.com"}, "{User:carol@example.com Tenant: Roles:[]}"},
		{"groups repeated", "10.0.0.5:1", []string{"X-Forwarded-User", "dan", "X-Forwarded-Groups", "staff", "X-Forwarded-Groups", "staff"}, "{User:dan Tenant: Roles:[viewer]}"},
		{"two tenants", "10.0.0.5:1", []string{"X-Forwarded-User", "eve", "X-Forwarded-Groups", "globex,initech"}, "unauthenticated"},
		{"trusted, no user", "10.0.0.5:1", []string{"X-Forwarded-Groups", "staff"}, "unauthenticated"},
		{"untrusted peer", "10.0.0.6:1", []string{"X-Forwarded-User", "alice"}, "unauthenticated"},
		{"untrusted peer naming a trusted one", "203.0.113.9:1", []string{"X-Forwarded-User", "alice", "X-Forwarded-For", "10.0.0.5", "X-Real-Ip", "10.0.0.5"}, "unauthenticated"},
		{"outside the prefix", "192.168.2.1:1", []string{"X-Forwarded-User", "alice"}, "unauthenticated"},
		{"IPv4 in IPv6", "[::ffff:10.0.0.5]:1", []string{"X-Forwarded-User", "frank"}, "{User:frank Tenant: Roles:[]}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := request(c.header...)
			r.RemoteAddr = c.peer
			id, err := p.Authenticate(r)
			got := fmt.Sprintf("%+v", id)
			if err != nil {
				if !errors.Is(err, auth.ErrUnauthenticated) {
					t.Fatalf("error %v does not match ErrUnauthenticated", err)
				}
				got = "unauthenticated"
			}
			if got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
	custom, err := auth.NewProxy(auth.ProxyConfig{Trusted: []string{"127.0.0.1"}, UserHeader: "remote-user", GroupsHeader: "Remote-Groups",
		Groups: map[string]auth.Grant{"ops": {Roles: []string{"admin"}}}})
	if err != nil {
		t.Fatal(err)
	}
	r := request("Remote-User", "gina", "Remote-Groups", "ops", "X-Forwarded-User", "mallory")
	r.RemoteAddr = "127.0.0.1:5"
	if id, err := custom.Authenticate(r); err != nil || fmt.Sprintf("%+v", id) != "{User:gina Tenant: Roles:[admin]}" {
		t.Errorf("custom headers: %+v, %v", id, err)
	}
}

func TestNewProxyRefuses(t *testing.T) {
	_, err := auth.NewProxy(auth.ProxyConfig{Trusted: []string{"10.0.0.0/33", "proxy.example.com"}})
	want := "auth: invalid option: proxy address \"10.0.0.0/33\" is not an IP or CIDR prefix (write e.g. 10.0.0.5 or 10.0.0.0/8)\n" +
		"auth: invalid option: proxy address \"proxy.example.com\" is not an IP or CIDR prefix (write e.g. 10.0.0.5 or 10.0.0.0/8)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v", err)
	}
	if _, err := auth.NewProxy(auth.ProxyConfig{}); err == nil || !errors.Is(err, auth.ErrOption) {
		t.Errorf("no addresses: %v", err)
	}
}

type failing struct{}

func (failing) Authenticate(*http.Request) (auth.Identity, error) {
	return auth.Identity{}, errors.New("store down")
}

func TestChain(t *testing.T) {
	ts := tokens(t)
	s, err := auth.NewSessions(ts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := auth.NewProxy(auth.ProxyConfig{Trusted: []string{"10.0.0.5"}})
	if err != nil {
		t.Fatal(err)
	}
	ch := auth.Chain(ts, s, nil, p)
	bobCookie := login(t, s, request(), bobSecret)
	for _, c := range []struct {
		name string
		r    func() *http.Request
		want string
	}{
		{"nothing", func() *http.Request { return request() }, "auth: no valid credentials"},
		{"token", func() *http.Request { return request("Authorization", "Bearer "+aliceSecret) }, "alice"},
		{"token first", func() *http.Request {
			r := withCookie(bobCookie)
			r.Header.Set("Authorization", "Bearer "+aliceSecret)
			return r
		}, "alice"},
		{"cookie", func() *http.Request { return withCookie(bobCookie) }, auth.TokenUser(bobSecret)},
		{"proxy", func() *http.Request {
			r := request("X-Forwarded-User", "zed")
			r.RemoteAddr = "10.0.0.5:1"
			return r
		}, "zed"},
		{"proxy header from elsewhere", func() *http.Request { return request("X-Forwarded-User", "zed") }, "auth: no valid credentials"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, err := ch.Authenticate(c.r())
			got := id.User
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	if _, err := auth.Chain(ts, failing{}).Authenticate(request()); err == nil || err.Error() != "store down" {
		t.Errorf("a failing authenticator: %v, want its error", err)
	}
	if _, err := auth.Chain().Authenticate(request()); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("an empty chain: %v", err)
	}
}
