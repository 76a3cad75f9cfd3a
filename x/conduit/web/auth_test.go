package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789"
)

// testClock is a settable clock for sessions.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// authServer is a Handler that authenticates by tokens, session cookies
// and, when proxy is not nil, a proxy; its store is at dir, its
// revocations in the same store.
type authServer struct {
	srv   *httptest.Server
	store ledger.Store
	prov  *script.Provider
}

func tokenSet(t *testing.T, secrets ...string) *auth.Tokens {
	t.Helper()
	grants := map[string]auth.Token{
		aliceToken: {Secret: aliceToken, Identity: auth.Identity{User: "alice", Tenant: "acme", Roles: []string{"editor", "viewer"}}},
		bobToken:   {Secret: bobToken, Identity: auth.Identity{Roles: []string{"viewer"}}},
	}
	var list []auth.Token
	for _, s := range secrets {
		list = append(list, grants[s])
	}
	ts, err := auth.NewTokens(list...)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func newAuthServer(t *testing.T, dir string, clk *testClock, tokens *auth.Tokens, proxy *auth.Proxy, steps ...script.Step) *authServer {
	t.Helper()
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := auth.NewSessions(tokens, auth.WithSessionClock(clk.Now), auth.WithSessionTTL(time.Hour), auth.WithRevocations(store))
	if err != nil {
		t.Fatal(err)
	}
	prov := script.Play(steps...)
	reg := registry(t)
	var chain auth.Authenticator = auth.Chain(tokens, sessions)
	if proxy != nil {
		chain = auth.Chain(tokens, sessions, proxy)
	}
	h, err := web.New(prov, store, quiet(), web.WithAuthenticator(chain), web.WithSessions(sessions), web.WithLoopOptions(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		h.Close()
		srv.Close()
		store.Close()
	})
	return &authServer{srv: srv, store: store, prov: prov}
}

// do sends a request with headers (name, value pairs) and cookies, and
// returns its status, body and the cookies it set.
func (a *authServer) do(t *testing.T, method, path, body string, cookies []*http.Cookie, hdr ...string) (int, string, []*http.Cookie) {
	t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	for _, c := range cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Cookies()
}

func (a *authServer) login(t *testing.T, token string) []*http.Cookie {
	t.Helper()
	code, body, cookies := a.do(t, http.MethodPost, "/api/login", `{"token":"`+token+`"}`, nil)
	if code != http.StatusNoContent || len(cookies) != 1 || cookies[0].Name != auth.CookieName {
		t.Fatalf("login: %d %q, cookies %v", code, body, cookies)
	}
	return cookies
}

func (a *authServer) threads(t *testing.T) int {
	t.Helper()
	n := 0
	for _, err := range a.store.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// Every route but the page's files and the login needs credentials: a
// request without valid ones is 401, and neither the model nor the store
// is touched.
func TestUnauthenticatedRunsNothing(t *testing.T) {
	clk := &testClock{now: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}
	proxy, err := auth.NewProxy(auth.ProxyConfig{Trusted: []string{"10.9.9.9"}})
	if err != nil {
		t.Fatal(err)
	}
	a := newAuthServer(t, t.TempDir(), clk, tokenSet(t, aliceToken, bobToken), proxy, script.Call("c1", "add", `{"a":1,"b":2}`), script.Text("3"))
	forged := []*http.Cookie{{Name: auth.CookieName, Value: "v1.00000000000000000000000000000000.99999999999.AAAA"}}
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/api/info", ""},
		{http.MethodGet, "/api/threads", ""},
		{http.MethodPost, "/api/threads", ""},
		{http.MethodPost, "/api/chat", chatBody("", "add 1 and 2")},
		{http.MethodPost, "/api/chat", chatBody("t1", "add 1 and 2")},
		{http.MethodGet, "/api/threads/t1", ""},
		{http.MethodGet, "/api/chat/t1/stream", ""},
		{http.MethodPost, "/api/threads/t1/cancel", ""},
		{http.MethodPost, "/api/threads/t1/decide", `{"decisions":[{"id":"c1","approve":true}]}`},
	}
	callers := []struct {
		name    string
		cookies []*http.Cookie
		hdr     []string
	}{
		{"no credentials", nil, nil},
		{"a wrong token", nil, []string{"Authorization", "Bearer " + aliceToken + "x"}},
		{"a token in another scheme", nil, []string{"Authorization", "Basic " + aliceToken}},
		{"a forged cookie", forged, nil},
		{"a proxy's header from an untrusted peer", nil, []string{"X-Forwarded-User", "alice", "X-Forwarded-For", "10.9.9.9"}},
	}
	for _, c := range callers {
		for _, rt := range routes {
			code, body, _ := a.do(t, rt.method, rt.path, rt.body, c.cookies, c.hdr...)
			if code != http.StatusUnauthorized || !strings.HasPrefix(body, "web: unauthorized: auth: no valid credentials") {
				t.Errorf("%s: %s %s = %d %q, want 401", c.name, rt.method, rt.path, code, body)
			}
		}
	}
	if n := len(a.prov.Requests()); n != 0 {
		t.Errorf("the model got %d requests", n)
	}
	if n := a.threads(t); n != 0 {
		t.Errorf("the store holds %d threads", n)
	}
	// The page itself loads, so that it can ask for a token.
	if code, body, _ := a.do(t, http.MethodGet, "/", "", nil); code != http.StatusOK || !strings.Contains(body, "<title>lode chat</title>") {
		t.Errorf("GET / = %d", code)
	}
}

// A login trades a token for a cookie; the cookie works until its logout
// or its expiry, and the identity on the threads is the token's.
func TestLoginLogoutExpiry(t *testing.T) {
	clk := &testClock{now: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}
	a := newAuthServer(t, t.TempDir(), clk, tokenSet(t, aliceToken, bobToken), nil, script.Text("hello"), script.Text("again"))

	for _, c := range []struct{ name, body string }{
		{"a wrong token", `{"token":"guess-guess-guess"}`},
		{"no token", `{}`},
		{"a token's prefix", `{"token":"alice-token"}`},
	} {
		code, body, cookies := a.do(t, http.MethodPost, "/api/login", c.body, nil)
		if code != http.StatusUnauthorized || body != "web: the token is not valid\n" || len(cookies) != 0 {
			t.Errorf("%s: %d %q, cookies %v; want 401 and no cookie", c.name, code, body, cookies)
		}
	}
	if code, _, _ := a.do(t, http.MethodPost, "/api/login", `{"token":`, nil); code != http.StatusBadRequest {
		t.Errorf("a broken body: %d, want 400", code)
	}
	cookie := a.login(t, aliceToken)
	if c := cookie[0]; !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.MaxAge != 3600 || strings.Contains(c.Value, aliceToken) {
		t.Errorf("cookie %+v", c)
	}
	code, body, _ := a.do(t, http.MethodGet, "/api/info", "", cookie)
	if code != http.StatusOK {
		t.Fatalf("info with the cookie: %d %q", code, body)
	}
	// The body cannot name another caller: the thread holds the
	// token's identity.
	resp := a.srv.Client()
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/api/chat", strings.NewReader(
		`{"id":"","metadata":{"tenant":"globex"},"messages":[{"id":"m1","role":"user","metadata":{"lode.user":"mallory","tenant":"globex"},"parts":[{"type":"text","text":"hi"}]}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-User", "mallory")
	req.AddCookie(cookie[0])
	r, err := resp.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	thread := r.Header.Get("X-Lode-Thread")
	parts(t, r)
	st, err := a.store.Load(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	meta := st.AllMetadata()
	st.Close()
	for k, want := range map[string]string{web.OwnerKey: "alice", web.UserKey: "alice", web.TenantKey: "acme", web.RoleKey: "editor,viewer"} {
		if meta[k] != want {
			t.Errorf("thread metadata %s = %q, want %q", k, meta[k], want)
		}
	}
	// Bob's token does not reach alice's thread.
	if code, _, _ := a.do(t, http.MethodGet, "/api/threads/"+thread, "", nil, "Authorization", "Bearer "+bobToken); code != http.StatusNotFound {
		t.Errorf("bob reads alice's thread: %d, want 404", code)
	}

	code, _, cleared := a.do(t, http.MethodPost, "/api/logout", "", cookie)
	if code != http.StatusNoContent || len(cleared) != 1 || cleared[0].MaxAge >= 0 {
		t.Errorf("logout: %d, cookies %+v; want 204 and the cookie cleared", code, cleared)
	}
	code, body, _ = a.do(t, http.MethodPost, "/api/chat", chatBody(thread, "again"), cookie)
	if code != http.StatusUnauthorized || body != "web: unauthorized: auth: the session has ended: log in again\n" {
		t.Errorf("the cookie replayed after its logout: %d %q", code, body)
	}

	cookie = a.login(t, aliceToken)
	clk.Add(59 * time.Minute)
	if code, _, _ := a.do(t, http.MethodGet, "/api/threads", "", cookie); code != http.StatusOK {
		t.Errorf("before expiry: %d", code)
	}
	clk.Add(time.Minute)
	if code, body, _ := a.do(t, http.MethodGet, "/api/threads", "", cookie); code != http.StatusUnauthorized || !strings.Contains(body, "session has ended") {
		t.Errorf("after expiry: %d %q", code, body)
	}
	if n := len(a.prov.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want 1", n)
	}
}

// Two handlers over one store, as two replicas: a cookie logged out on
// one fails on the other; a cookie of a token one of them no longer has
// fails there.
func TestSessionsAcrossReplicas(t *testing.T) {
	dir := t.TempDir()
	clk := &testClock{now: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}
	one := newAuthServer(t, dir, clk, tokenSet(t, aliceToken, bobToken), nil)
	two := newAuthServer(t, dir, clk, tokenSet(t, aliceToken, bobToken), nil)
	three := newAuthServer(t, dir, clk, tokenSet(t, bobToken), nil)

	cookie := one.login(t, aliceToken)
	for name, a := range map[string]*authServer{"one": one, "two": two} {
		if code, _, _ := a.do(t, http.MethodGet, "/api/threads", "", cookie); code != http.StatusOK {
			t.Errorf("replica %s before the logout: %d", name, code)
		}
	}
	if code, _, _ := three.do(t, http.MethodGet, "/api/threads", "", cookie); code != http.StatusUnauthorized {
		t.Errorf("a replica whose configuration lost the token: %d, want 401", code)
	}
	bobs := three.login(t, bobToken)
	if code, _, _ := one.do(t, http.MethodGet, "/api/threads", "", bobs); code != http.StatusOK {
		t.Errorf("bob's cookie from another replica: %d", code)
	}
	if code, _, _ := two.do(t, http.MethodPost, "/api/logout", "", cookie); code != http.StatusNoContent {
		t.Fatalf("logout on two: %d", code)
	}
	for name, a := range map[string]*authServer{"one": one, "two": two} {
		if code, _, _ := a.do(t, http.MethodGet, "/api/threads", "", cookie); code != http.StatusUnauthorized {
			t.Errorf("replica %s, the cookie replayed after its logout: %d, want 401", name, code)
		}
		if code, _, _ := a.do(t, http.MethodGet, "/api/threads", "", bobs); code != http.StatusOK {
			t.Errorf("replica %s, another session: %d", name, code)
		}
	}
}

// Login and logout keep the CSRF and Host defences of every other POST.
func TestLoginKeepsTheDefences(t *testing.T) {
	clk := &testClock{now: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}
	a := newAuthServer(t, t.TempDir(), clk, tokenSet(t, aliceToken), nil)
	cookie := a.login(t, aliceToken)
	for _, path := range []string{"/api/login", "/api/logout"} {
		for _, c := range []struct {
			name string
			hdr  []string
		}{
			{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}},
			{"another origin", []string{"Origin", "https://evil.example"}},
			{"a rebinding Host", []string{"Host", "evil.example"}},
		} {
			code, _, set := a.do(t, http.MethodPost, path, `{"token":"`+aliceToken+`"}`, cookie, c.hdr...)
			if code != http.StatusForbidden || len(set) != 0 {
				t.Errorf("%s %s: %d, cookies %v; want 403 and none", path, c.name, code, set)
			}
		}
	}
	if code, _, _ := a.do(t, http.MethodGet, "/api/threads", "", cookie); code != http.StatusOK {
		t.Errorf("the cookie after refused logouts: %d, want it still good", code)
	}
	if code, _, _ := a.do(t, http.MethodGet, "/api/login", "", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/login: %d, want 405", code)
	}
}

// A proxy's header names the caller only from the proxy's address.
func TestProxyHeaderAtWeb(t *testing.T) {
	clk := &testClock{now: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}
	for _, c := range []struct {
		name    string
		trusted string
		want    int
	}{
		{"from the proxy", "127.0.0.1", http.StatusCreated},
		{"from elsewhere", "10.0.0.5", http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxy, err := auth.NewProxy(auth.ProxyConfig{Trusted: []string{c.trusted},
				Groups: map[string]auth.Grant{"globex": {Tenant: "globex", Roles: []string{"viewer"}}}})
			if err != nil {
				t.Fatal(err)
			}
			a := newAuthServer(t, t.TempDir(), clk, tokenSet(t, aliceToken), proxy)
			code, body, _ := a.do(t, http.MethodPost, "/api/threads", "", nil, "X-Forwarded-User", "zoe", "X-Forwarded-Groups", "globex")
			if code != c.want {
				t.Fatalf("POST /api/threads: %d %q, want %d", code, body, c.want)
			}
			if code != http.StatusCreated {
				return
			}
			for info, err := range a.store.List(context.Background()) {
				if err != nil {
					t.Fatal(err)
				}
				if m := info.Metadata; m[web.OwnerKey] != "zoe" || m[web.TenantKey] != "globex" || m[web.RoleKey] != "viewer" {
					t.Errorf("thread metadata %v", m)
				}
			}
		})
	}
}

func TestAuthOptionsChecked(t *testing.T) {
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, err = web.New(script.Play(), store, web.WithAuthenticator(nil), web.WithSessions(nil))
	for _, s := range []string{"WithAuthenticator(nil)", "WithSessions(nil)"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("New: %v: does not name %s", err, s)
		}
	}
	_, err = web.New(script.Play(), store, web.WithAuthenticator(tokenSet(t, aliceToken)), web.WithIdentify(owner))
	if want := "web: invalid option: WithIdentify and WithAuthenticator (or WithSessions) both given: give one"; err == nil || err.Error() != want {
		t.Errorf("New: %v, want %q", err, want)
	}
}
