package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/tool/mcp"
)

const (
	aliceToken = "alice-secret-token"
	bobToken   = "bob-secret-token"
)

var loginVars = map[string]string{"ALICE_TOKEN": aliceToken, "BOB_TOKEN": bobToken}

// loginTokens are two logins: alice of tenant acme, bob of globex.
const loginTokens = `tokens:
  - { user: alice, tenant: acme, roles: [editor], env: ALICE_TOKEN }
  - { user: bob, tenant: globex, roles: [editor], env: BOB_TOKEN }
`

const loginPolicy = `policy:
  roles:
    editor:
      allow: { packs: [calculator, filesystem] }
`

// startDoor runs lode (web or serve --http) in-process on a free loopback
// port with vars as its environment and returns the address it printed.
func startDoor(t *testing.T, dir string, vars map[string]string, pattern string, args ...string) string {
	t.Helper()
	t.Chdir(dir)
	lines := make(chan string, 100)
	e := env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: lineWriter{lines}, getenv: func(k string) string { return vars[k] }, interrupts: make(chan os.Signal)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, e, args) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("lode %s ended with %d", args[0], code)
		}
	})
	said := ""
	for {
		select {
		case l := <-lines:
			said += l
			if m := regexp.MustCompile(pattern).FindStringSubmatch(l); m != nil {
				go func() {
					for range lines {
					}
				}()
				return m[1]
			}
		case code := <-done:
			done <- code
			t.Fatalf("lode %s exited with %d: %s", args[0], code, said)
		}
	}
}

func send(t *testing.T, method, url, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const chatHi = `{"messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}]}`

// With tokens: configured, lode web refuses every request without one,
// with or without a policy, and the model is never called; a token's
// caller chats, and its thread holds the token's user and tenant.
func TestWebLoginsFailClosed(t *testing.T) {
	for _, withPolicy := range []bool{false, true} {
		t.Run(fmt.Sprintf("policy %v", withPolicy), func(t *testing.T) {
			root := t.TempDir()
			config := fmt.Sprintf("tools:\n  calculator: {}\n  filesystem:\n    root: %q\n", root) + loginTokens
			if withPolicy {
				config += loginPolicy
			}
			dir := writeConfig(t, config)
			fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("hello alice")}}
			model := httptest.NewServer(fake)
			defer model.Close()
			store := filepath.Join(dir, "threads")
			url := startDoor(t, dir, loginVars, `chat at (http://\S+/)`, "web", "--addr", "127.0.0.1:0", "--store", store, "--base-url", model.URL+"/v1", "--model", "m")
			for _, c := range []struct{ method, path, body string }{
				{http.MethodGet, "api/threads", ""},
				{http.MethodGet, "api/info", ""},
				{http.MethodPost, "api/threads", ""},
				{http.MethodPost, "api/chat", chatHi},
			} {
				for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong-token-value"}, {"X-Forwarded-User", "alice"}} {
					if code, body := send(t, c.method, url+c.path, c.body, hdr...); code != http.StatusUnauthorized {
						t.Errorf("%s /%s with %v: %d %q, want 401", c.method, c.path, hdr, code, body)
					}
				}
			}
			fake.mu.Lock()
			asked := len(fake.requests)
			fake.mu.Unlock()
			if asked != 0 {
				t.Fatalf("the model was called %d times without a token", asked)
			}
			code, body := send(t, http.MethodPost, url+"api/chat", chatHi, "Authorization", "Bearer "+aliceToken)
			if code != http.StatusOK || !strings.Contains(body, "hello alice") {
				t.Fatalf("alice: %d %s", code, body)
			}
			code, body = send(t, http.MethodGet, url+"api/threads", "", "Authorization", "Bearer "+aliceToken)
			id := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(body)
			if code != http.StatusOK || id == nil {
				t.Fatalf("alice's threads: %d %s", code, body)
			}
			meta := threadMeta(t, store, id[1])
			if meta[auth.UserKey] != "alice" || meta[auth.TenantKey] != "acme" || meta[auth.RolesKey] != "editor" {
				t.Errorf("alice's thread holds %v", meta)
			}
			if code, _ := send(t, http.MethodGet, url+"api/threads/"+id[1], "", "Authorization", "Bearer "+bobToken); code != http.StatusNotFound {
				t.Errorf("bob reads alice's thread: %d, want 404", code)
			}
		})
	}
}

func threadMeta(t *testing.T, dir, id string) map[string]string {
	t.Helper()
	st, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	th, err := st.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer th.Close()
	return th.AllMetadata()
}

// The page's login at lode web: a token for a cookie that works until the
// logout, and not after, also on a second lode web over the same store.
func TestWebLoginAndLogout(t *testing.T) {
	dir := writeConfig(t, "tools:\n  calculator: {}\n"+loginTokens+"sessions:\n  ttl: 2h\n  secure: true\n")
	store := filepath.Join(dir, "threads")
	args := []string{"web", "--addr", "127.0.0.1:0", "--store", store, "--base-url", "http://127.0.0.1:1/v1", "--model", "m"}
	one := startDoor(t, dir, loginVars, `chat at (http://\S+/)`, args...)
	two := startDoor(t, dir, loginVars, `chat at (http://\S+/)`, args...)
	if code, body := send(t, http.MethodPost, one+"api/login", `{"token":"not-a-token"}`); code != http.StatusUnauthorized || strings.Contains(body, "not-a-token") {
		t.Errorf("a wrong token: %d %q", code, body)
	}
	req, _ := http.NewRequest(http.MethodPost, one+"api/login", strings.NewReader(`{"token":"`+aliceToken+`"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusNoContent || len(cookies) != 1 || !cookies[0].Secure || !cookies[0].HttpOnly || cookies[0].MaxAge != 7200 {
		t.Fatalf("login: %d, cookies %+v; want 204 and a Secure HttpOnly cookie for 2h", resp.StatusCode, cookies)
	}
	cookie := auth.CookieName + "=" + cookies[0].Value
	for _, url := range []string{one, two} {
		if code, body := send(t, http.MethodGet, url+"api/info", "", "Cookie", cookie); code != http.StatusOK || !strings.Contains(body, `"user":"alice"`) {
			t.Errorf("%s with the cookie: %d %s", url, code, body)
		}
	}
	if code, _ := send(t, http.MethodPost, two+"api/logout", "", "Cookie", cookie); code != http.StatusNoContent {
		t.Fatalf("logout: %d", code)
	}
	for _, url := range []string{one, two} {
		if code, _ := send(t, http.MethodGet, url+"api/info", "", "Cookie", cookie); code != http.StatusUnauthorized {
			t.Errorf("%s, the cookie replayed after its logout: %d, want 401", url, code)
		}
	}
}

// A proxy's header names the caller at lode web from the proxy's address
// only.
func TestWebProxyLogin(t *testing.T) {
	for _, c := range []struct {
		addresses string
		want      int
	}{
		{"[127.0.0.1]", http.StatusCreated},
		{"[10.0.0.5, 192.168.0.0/16]", http.StatusUnauthorized},
	} {
		t.Run(c.addresses, func(t *testing.T) {
			dir := writeConfig(t, "tools:\n  calculator: {}\nproxy:\n  addresses: "+c.addresses+"\n  users:\n    zoe: { roles: [editor], tenant: acme }\n")
			url := startDoor(t, dir, nil, `chat at (http://\S+/)`, "web", "--addr", "127.0.0.1:0", "--store", filepath.Join(dir, "threads"), "--base-url", "http://127.0.0.1:1/v1", "--model", "m")
			if code, body := send(t, http.MethodPost, url+"api/threads", "", "X-Forwarded-User", "zoe"); code != c.want {
				t.Errorf("POST /api/threads as zoe: %d %q, want %d", code, body, c.want)
			}
			if code, _ := send(t, http.MethodPost, url+"api/threads", ""); code != http.StatusUnauthorized {
				t.Errorf("no header: %d, want 401", code)
			}
		})
	}
}

// With tokens: configured, lode serve --http refuses initialize and calls
// without one, with or without a policy, and runs nothing.
func TestServeLoginsFailClosed(t *testing.T) {
	for _, withPolicy := range []bool{false, true} {
		t.Run(fmt.Sprintf("policy %v", withPolicy), func(t *testing.T) {
			root := t.TempDir()
			config := fmt.Sprintf("tools:\n  calculator: {}\n  filesystem:\n    root: %q\n", root) + loginTokens
			if withPolicy {
				config += loginPolicy
			}
			dir := writeConfig(t, config)
			url := startDoor(t, dir, loginVars, `tools at (http://\S+/mcp)`, "serve", "--http", "127.0.0.1:0")
			initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
			call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"filesystem__write","arguments":{"path":"x.txt","content":"x"}}}`
			for _, body := range []string{initialize, call} {
				for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong-token-value"}} {
					code, text := send(t, http.MethodPost, url, body, append(hdr, "Accept", "application/json, text/event-stream")...)
					if code != http.StatusUnauthorized {
						t.Errorf("%.40s with %v: %d %q, want 401", body, hdr, code, text)
					}
				}
			}
			if _, err := os.Stat(filepath.Join(root, "x.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("x.txt: %v: a call without a token ran", err)
			}
			c, err := mcp.NewClient(mcp.WithName("lode"), mcp.WithHTTP(url), mcp.WithHeader("Authorization", "Bearer "+aliceToken))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tools, err := c.Tools(context.Background())
			if err != nil || len(tools) == 0 {
				t.Errorf("alice lists %d tools: %v", len(tools), err)
			}
		})
	}
}

// pricedTenants: model m at $1000 per million tokens, and a day's limit for
// tenant acme below what one request costs.
const pricedTenants = `model: { name: m }
catalog:
  m: { input: 1000, output: 2000 }
tools:
  calculator: {}
policy:
  roles:
    editor:
      allow: { packs: [calculator] }
  tenants:
    acme: { usd_per_day: 0.01 }
`

// A tenant's limit binds at lode web for a caller whose token names the
// tenant, and not for a caller of another tenant.
func TestWebTenantLimitBinds(t *testing.T) {
	dir := writeConfig(t, pricedTenants+loginTokens)
	fake := &fakeOpenAI{replies: []func(http.ResponseWriter, *http.Request){textReply("hello bob")}}
	model := httptest.NewServer(fake)
	defer model.Close()
	url := startDoor(t, dir, loginVars, `chat at (http://\S+/)`, "web", "--addr", "127.0.0.1:0", "--store", filepath.Join(dir, "threads"), "--base-url", model.URL+"/v1")
	code, body := send(t, http.MethodPost, url+"api/chat", chatHi, "Authorization", "Bearer "+aliceToken)
	if code != http.StatusOK || !strings.Contains(body, "tenant acme has spent $0.0000 of its $0.0100 per day") {
		t.Errorf("alice (tenant acme): %d\n%s", code, body)
	}
	fake.mu.Lock()
	n := len(fake.requests)
	fake.mu.Unlock()
	if n != 0 {
		t.Fatalf("the model was called %d times for a tenant over its limit", n)
	}
	code, body = send(t, http.MethodPost, url+"api/chat", chatHi, "Authorization", "Bearer "+bobToken)
	if code != http.StatusOK || !strings.Contains(body, "hello bob") {
		t.Errorf("bob (tenant globex): %d\n%s", code, body)
	}
}

// lode serve --http gives the MCP server a state that carries the
// caller's user, tenant and roles, from its token: the door's policy
// decides by them, and its tenant limit binds that state.
func TestServeCarriesTheIdentity(t *testing.T) {
	dir := writeConfig(t, pricedTenants+loginTokens+"store: threads\n")
	t.Chdir(dir)
	cfg, err := parseConfig(filepath.Join(dir, "lode.yaml"), []byte(pricedTenants+loginTokens+"store: threads\n"))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := mountTools(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	e := env{stderr: io.Discard, getenv: func(k string) string { return loginVars[k] }}
	d, err := openDoor(e, cfg, tb, doorSpec{kind: doorServe, http: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		token, identity string
		spend           string
	}{
		{aliceToken, "{User:alice Tenant:acme Roles:[editor]}", "policy: tenant acme has spent $0.0000 of its $0.0100 per day"},
		{bobToken, "{User:bob Tenant:globex Roles:[editor]}", "<nil>"},
		{"", "", "unauthenticated"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+c.token)
		}
		st, err := d.logins.identify(r)
		if c.token == "" {
			if !errors.Is(err, auth.ErrUnauthenticated) || st != nil {
				t.Errorf("no token: %v, %v", st, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%+v", auth.Of(st)); got != c.identity {
			t.Errorf("identity %s, want %s", got, c.identity)
		}
		if dec := d.enf.Decide(policy.Roles(st), "calculator__eval"); !dec.Allowed {
			t.Errorf("%s may not use the calculator: %+v", c.identity, dec)
		}
		req := &provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleUser}}}
		settle, err := d.enf.SpendLimit().Admit(context.Background(), st, req, loop.Estimate{InputTokens: loop.EstimateInput(req)})
		if settle != nil {
			settle(context.Background(), nil, errors.New("not sent"))
		}
		if fmt.Sprint(err) != c.spend {
			t.Errorf("%s: spend limit %v, want %s", c.identity, err, c.spend)
		}
	}
}

// Every mistake in the logins' configuration is one line, with its line.
func TestLoginsRefused(t *testing.T) {
	web := []string{"web", "--addr", "127.0.0.1:0", "--base-url", "http://127.0.0.1:1/v1", "--model", "m"}
	for _, c := range []struct {
		name, config string
		vars         map[string]string
		args         []string
		code         int
		want         string
	}{
		{"proxy without addresses", "proxy:\n  users: {}\n", nil, web, 1,
			"lode: lode.yaml:1: proxy: needs addresses: the IPs or CIDR prefixes lode is reached from through the proxy (its headers are trusted from there only)\n"},
		{"a bad address", "proxy:\n  addresses: [10.0.0.1, nope]\n", nil, web, 1,
			"lode: lode.yaml:2: proxy.addresses: \"nope\" is not an IP or CIDR prefix (write e.g. 10.0.0.5 or 10.0.0.0/8)\n"},
		{"an unknown proxy key", "proxy:\n  address: [10.0.0.1]\n", nil, web, 1,
			"lode: lode.yaml:2: unknown key \"address\" in proxy:\n"},
		{"an unknown grant key", "proxy:\n  addresses: [10.0.0.1]\n  users:\n    zoe: { role: admin }\n", nil, web, 1,
			"lode: lode.yaml:4: unknown key \"role\" in proxy.users.zoe:\n"},
		{"a negative ttl", "tokens:\n  - { env: T }\nsessions:\n  ttl: -1h\n", map[string]string{"T": aliceToken}, web, 1,
			"lode: lode.yaml:4: sessions.ttl must not be negative (0 means the default, 12h0m0s)\n"},
		{"sessions without tokens", "sessions:\n  ttl: 1h\n", nil, web, 1,
			"lode: lode.yaml:1: sessions: sets the page's login, which trades a token: add tokens:\n"},
		{"an unset session key", "tokens:\n  - { env: T }\nsessions:\n  key_env: K\n", map[string]string{"T": aliceToken}, web, 1,
			"lode: lode.yaml:4: the variable K that should hold the session key is empty or unset\n"},
		{"a short token", "tokens:\n  - { env: T }\n", map[string]string{"T": "short"}, web, 1,
			"lode: lode.yaml:2: the token in the variable T has 5 bytes: give at least 8 (e.g. openssl rand -hex 32)\n"},
		{"--role with tokens at web", "tokens:\n  - { env: T }\n" + loginPolicy + "tools:\n  calculator: {}\n  filesystem: {root: .}\n", map[string]string{"T": aliceToken}, append(web, "--role", "editor"), 2,
			"lode: --role gives the roles of callers of a door with no logins; lode.yaml has tokens:, which give each caller's: leave --role out\n"},
		{"--role with a proxy at serve", "proxy:\n  addresses: [10.0.0.1]\n" + loginPolicy + "tools:\n  calculator: {}\n  filesystem: {root: .}\n", nil, []string{"serve", "--http", "127.0.0.1:0", "--role", "editor"}, 2,
			"lode: --role gives the roles of callers of a door with no logins; lode.yaml has proxy:, which give each caller's: leave --role out\n"},
		{"web elsewhere with no logins", "", nil, []string{"web", "--addr", "0.0.0.0:0", "--allow-host", "chat.example", "--base-url", "http://127.0.0.1:1/v1", "--model", "m"}, 2,
			"lode: --addr 0.0.0.0:0 is not a loopback address and lode.yaml configures no logins (tokens:, proxy:): anyone who reaches it could use the tools; add tokens: or proxy:, or --allow-unauthenticated to serve it with no authentication\n"},
		{"serve elsewhere with no logins", "", nil, []string{"serve", "--http", "0.0.0.0:0", "--allow-host", "tools.example"}, 2,
			"lode: --http 0.0.0.0:0 is not a loopback address and lode.yaml configures no logins (tokens:, proxy:): anyone who reaches it could use the tools; add tokens: or proxy:, or --allow-unauthenticated to serve it with no authentication\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeConfig(t, c.config)
			r := lode(t, dir, c.vars, "", c.args...)
			if r.code != c.code || r.stderr != c.want {
				t.Errorf("exit %d, stderr %q\nwant %d, %q", r.code, r.stderr, c.code, c.want)
			}
		})
	}
}
