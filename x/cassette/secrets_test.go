package cassette_test

import (
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/x/cassette"
)

// exchange is one request a test sends and the answer its server gives.
type exchange struct {
	method string
	// url is the request's URL on the server's base; nil means base+path.
	url    func(base string) string
	path   string
	header map[string]string
	body   string
	status int
	ctype  string
	reply  string
	// replayed is the body replay answers with; empty means reply.
	replayed string
}

// scripted is a server answering each request with the next exchange.
func scripted(t *testing.T, xs []exchange) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		x := xs[n%len(xs)]
		n++
		mu.Unlock()
		w.Header().Set("Content-Type", x.ctype)
		w.WriteHeader(x.status)
		_, _ = io.WriteString(w, x.reply)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// send makes every exchange's request through c and returns the bodies.
func send(t *testing.T, c *http.Client, base string, xs []exchange) ([]string, error) {
	t.Helper()
	var out []string
	for _, x := range xs {
		u := base + x.path
		if x.url != nil {
			u = x.url(base)
		}
		var body io.Reader
		if x.body != "" {
			body = strings.NewReader(x.body)
		}
		req, err := http.NewRequest(x.method, u, body)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range x.header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			return out, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != x.status {
			t.Errorf("%s %s: status %d, want %d", x.method, u, resp.StatusCode, x.status)
		}
		out = append(out, string(b))
	}
	return out, nil
}

func TestScrubByValue(t *testing.T) {
	const (
		queryKey = "AIzaSy-query-key-0001"
		formKey  = "form-client-secret-0002"
		password = "userinfo-pass-0003"
		bearer   = "sk-bearer-echoed-0004"
		escaped  = `es/ca"pe<d>ü-0005`
		mcpToken = "mcp-access-token-0006"
		mcpHdr   = "mcp-private-token-0007"
		late     = "late-learned-secret-0008"
		explicit = "given-0009"
	)
	json := func(s string) string { return `{"error":{"message":"bad key ` + s + `"}}` }
	cases := []struct {
		name    string
		opts    []cassette.Option
		xs      []exchange
		secrets []string
	}{
		{"query key", nil, []exchange{{
			method: "GET", path: "/v1beta/models?alt=sse&key=" + queryKey, status: 200, ctype: "application/json",
			reply: `{"models":[]}`,
		}}, []string{queryKey}},
		{"a short query key, redacted where it stands", nil, []exchange{{
			method: "GET", path: "/v1/models?Api_Key=abc12&page=abc12x", status: 200, ctype: "application/json",
			reply: `{"page":"abc12x"}`,
		}}, []string{"Api_Key=abc12&"}},
		{"a Basic password echoed in a body", nil, []exchange{{
			method: "POST", path: "/login", header: map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("bob:basic-pass-0010"))},
			body: "hello", status: 403, ctype: "text/plain", reply: "wrong password basic-pass-0010", replayed: "wrong password REDACTED",
		}}, []string{"basic-pass-0010", base64.StdEncoding.EncodeToString([]byte("bob:basic-pass-0010"))}},
		{"form key and a short one", nil, []exchange{{
			method: "POST", path: "/token", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			body: "grant_type=client_credentials&client_secret=" + formKey + "&password=pw12", status: 200, ctype: "application/json",
			reply: `{"token_type":"bearer","expires_in":60}`,
		}}, []string{formKey, "pw12"}},
		{"user info password", nil, []exchange{{
			method: "GET", url: func(base string) string {
				return strings.Replace(base, "http://", "http://alice:"+password+"@", 1) + "/mcp"
			},
			status: 200, ctype: "application/json", reply: `{"ok":true}`,
		}}, []string{password, base64.StdEncoding.EncodeToString([]byte("alice:" + password))}},
		{"key echoed in a body and an error response", nil, []exchange{{
			method: "POST", path: "/v1/chat/completions", header: map[string]string{"Authorization": "Bearer " + bearer, "Content-Type": "application/json"},
			body: `{"model":"m","user":"` + bearer + `"}`, status: 401, ctype: "application/json",
			reply: json(bearer), replayed: json(cassette.Redacted),
		}}, []string{bearer}},
		{"a JSON-escaped secret", []cassette.Option{cassette.WithSecrets(escaped)}, []exchange{{
			method: "POST", path: "/v1/echo", header: map[string]string{"Content-Type": "application/json"},
			body: `{"a":"es/ca\"pe\u003cd\u003eü-0005","b":"es\/ca\"pe<d>\u00fc-0005"}`, status: 500, ctype: "application/json",
			reply:    `{"go":"es/ca\"pe\u003cd\u003eü-0005","php":"es\/ca\"pe\u003cd\u003e\u00fc-0005","raw":"es/ca\"pe<d>ü-0005"}`,
			replayed: `{"go":"REDACTED","php":"REDACTED","raw":"REDACTED"}`,
		}}, []string{escaped, `es/ca\"pe\u003cd\u003eü-0005`, `es\/ca\"pe<d>\u00fc-0005`, `es/ca\"pe<d>ü-0005`, `\u00fc-0005`}},
		{"MCP url token and header", nil, []exchange{{
			method: "POST", path: "/mcp?access_token=" + mcpToken, header: map[string]string{"Private-Token": mcpHdr, "Content-Type": "application/json"},
			body: `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, status: 200, ctype: "application/json",
			reply:    `{"jsonrpc":"2.0","id":1,"result":{"echo":"` + mcpToken + ` ` + mcpHdr + `"}}`,
			replayed: `{"jsonrpc":"2.0","id":1,"result":{"echo":"REDACTED REDACTED"}}`,
		}}, []string{mcpToken, mcpHdr}},
		{"a secret first seen in a later interaction", nil, []exchange{
			{method: "GET", path: "/1", status: 200, ctype: "text/plain", reply: "your key is " + late, replayed: "your key is REDACTED"},
			{method: "GET", path: "/2", status: 200, ctype: "text/plain", reply: "two"},
			{method: "GET", path: "/3", status: 200, ctype: "text/plain", reply: "three"},
			{method: "GET", path: "/4", status: 200, ctype: "text/plain", reply: "four"},
			{method: "GET", path: "/5", header: map[string]string{"X-Api-Key": late}, status: 200, ctype: "text/plain", reply: "five"},
		}, []string{late}},
		{"an explicit short secret", []cassette.Option{cassette.WithSecrets(explicit)}, []exchange{{
			method: "POST", path: "/x", body: "note " + explicit, status: 200, ctype: "text/plain", reply: "ok " + explicit, replayed: "ok REDACTED",
		}}, []string{explicit}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := scripted(t, tc.xs)
			path := filepath.Join(t.TempDir(), "c.yaml")
			rec, err := cassette.New(path, append([]cassette.Option{cassette.WithMode(cassette.Record)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			live, err := send(t, rec.Client(), srv.URL, tc.xs)
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range tc.xs {
				if live[i] != x.reply {
					t.Errorf("record: body %d %q, want %q", i, live[i], x.reply)
				}
			}
			if err := rec.Stop(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.secrets {
				if strings.Contains(string(data), s) {
					t.Errorf("the cassette holds %q:\n%s", s, data)
				}
			}
			if !strings.Contains(string(data), cassette.Redacted) {
				t.Errorf("the cassette holds no %s:\n%s", cassette.Redacted, data)
			}

			srv.Close()
			rep, err := cassette.New(path, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer rep.Stop()
			got, err := send(t, rep.Client(), srv.URL, tc.xs)
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			for i, x := range tc.xs {
				want := x.reply
				if x.replayed != "" {
					want = x.replayed
				}
				if got[i] != want {
					t.Errorf("replay: body %d %q, want %q", i, got[i], want)
				}
			}
		})
	}
}

// TestScrubMissNamesNoSecret: a replay miss of a request carrying a key
// in its query says where it differs without printing the key.
func TestScrubMissNamesNoSecret(t *testing.T) {
	const key = "AIzaSy-miss-key-4545"
	xs := []exchange{{method: "GET", path: "/v1/models?key=" + key + "&page=1", status: 200, ctype: "application/json", reply: `{}`}}
	srv := scripted(t, xs)
	path := filepath.Join(t.TempDir(), "c.yaml")
	rec, err := cassette.New(path, cassette.WithMode(cassette.Record))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := send(t, rec.Client(), srv.URL, xs); err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	rep, err := cassette.New(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Stop()
	xs[0].path = "/v1/models?key=" + key + "&page=2"
	_, err = send(t, rep.Client(), srv.URL, xs)
	var miss *cassette.MissError
	if !errors.As(err, &miss) || !errors.Is(err, cassette.ErrNoInteraction) {
		t.Fatalf("err %v, want a *MissError", err)
	}
	if strings.Contains(miss.Error(), key) {
		t.Errorf("the miss names the key: %v", err)
	}
	want := "differs at the URL: recorded " + srv.URL + "/v1/models?key=REDACTED&page=1, request " + srv.URL + "/v1/models?key=REDACTED&page=2"
	if !strings.Contains(miss.Detail(), want) || strings.Contains(miss.Detail(), cassette.EnvRecord) {
		t.Errorf("detail %q, want %q and no advice", miss.Detail(), want)
	}
}

func TestWithSecretsBad(t *testing.T) {
	_, err := cassette.New(filepath.Join(t.TempDir(), "c.yaml"), cassette.WithMode(cassette.Record), cassette.WithSecrets("ok-secret", ""))
	if !errors.Is(err, cassette.ErrOption) || err.Error() != "cassette: invalid option: WithSecrets: an empty secret" {
		t.Errorf("err %v, want the empty secret refused", err)
	}
}

// TestAddSecrets: a secret added after New, even a short one, leaves the
// file; an empty one is skipped rather than wrecking it.
func TestAddSecrets(t *testing.T) {
	xs := []exchange{{method: "POST", path: "/a", body: "late abc", status: 200, ctype: "text/plain", reply: "abc back"}}
	srv := scripted(t, xs)
	path := filepath.Join(t.TempDir(), "c.yaml")
	rec, err := cassette.New(path, cassette.WithMode(cassette.Record))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := send(t, rec.Client(), srv.URL, xs); err != nil {
		t.Fatal(err)
	}
	rec.AddSecrets("", "abc")
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"body: late REDACTED", "body: REDACTED back", "method: POST"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the cassette lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), "abc") {
		t.Errorf("the cassette holds abc:\n%s", data)
	}
}

// BenchmarkReplayScrubbed is replay's cost per request when the request
// carries a key in its query and its body: learning, scrubbing the live
// request as the recording was, and matching.
func BenchmarkReplayScrubbed(b *testing.B) {
	const key = "sk-bench-secret-0123456789"
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("hello world ", 200) + `"}],"user":"` + key + `"}`
	xs := []exchange{{method: "POST", path: "/v1/chat?key=" + key, header: map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"},
		body: body, status: 200, ctype: "application/json", reply: `{"ok":true}`}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	path := filepath.Join(b.TempDir(), "c.yaml")
	rec, err := cassette.New(path, cassette.WithMode(cassette.Record))
	if err != nil {
		b.Fatal(err)
	}
	do := func(c *http.Client) {
		req, _ := http.NewRequest("POST", srv.URL+xs[0].path, strings.NewReader(body))
		for k, v := range xs[0].header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	for range 50 {
		do(rec.Client())
	}
	if err := rec.Stop(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		rep, err := cassette.New(path)
		if err != nil {
			b.Fatal(err)
		}
		c := rep.Client()
		b.StartTimer()
		do(c)
		b.StopTimer()
		_ = rep.Stop()
		b.StartTimer()
	}
}

// TestReplayLateSecretInBody: a request whose body carried a secret the
// recording learned only later replays without the secret being given,
// Redacted standing for any text there; other differences still miss.
func TestReplayLateSecretInBody(t *testing.T) {
	const late = "late-body-secret-4711"
	xs := []exchange{
		{method: "POST", path: "/1", header: map[string]string{"Content-Type": "application/json"}, body: `{"note":"key=` + late + `;","n":1}`, status: 200, ctype: "text/plain", reply: "one"},
		{method: "GET", path: "/2", header: map[string]string{"Authorization": "Bearer " + late}, status: 200, ctype: "text/plain", reply: "two"},
	}
	srv := scripted(t, xs)
	path := filepath.Join(t.TempDir(), "c.yaml")
	rec, err := cassette.New(path, cassette.WithMode(cassette.Record))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := send(t, rec.Client(), srv.URL, xs); err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), late) {
		t.Fatalf("the cassette holds the late secret:\n%s", data)
	}
	cases := []struct {
		name, body string
		miss       bool
	}{
		{"the same secret", `{"note":"key=` + late + `;","n":1}`, false},
		{"another key", `{"note":"key=sk-other;","n":1}`, false},
		{"no key", `{"note":"key=;","n":1}`, true},
		{"another prefix", `{"note":"kay=` + late + `;","n":1}`, true},
		{"another field", `{"note":"key=` + late + `;","n":2}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := cassette.New(path)
			if err != nil {
				t.Fatal(err)
			}
			defer rep.Stop()
			one := []exchange{xs[0]}
			one[0].body = tc.body
			got, err := send(t, rep.Client(), srv.URL, one)
			if tc.miss {
				if !errors.Is(err, cassette.ErrNoInteraction) {
					t.Errorf("err %v, want a miss", err)
				}
				return
			}
			if err != nil || got[0] != "one" {
				t.Errorf("got %q, %v; want one", got, err)
			}
		})
	}
}

func TestCredentialName(t *testing.T) {
	for name, want := range map[string]bool{
		"key": true, "API_KEY": true, "apikey": true, "access_token": true, "X-Goog-Api-Key": true,
		"Private-Token": true, "sig": true, "X-Amz-Signature": true, "client_secret": true, "password": true, "auth": true,
		"monkey": false, "max_tokens": false, "page": false, "tokens": false, "": false, "keyboard": false,
	} {
		if got := cassette.CredentialName(name); got != want {
			t.Errorf("CredentialName(%q) = %v, want %v", name, got, want)
		}
	}
}
