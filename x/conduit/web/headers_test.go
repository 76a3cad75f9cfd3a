package web_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

// securityHeaders are what every response of the handler carries.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Frame-Options":        "DENY",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
}

// TestSecurityHeadersOnEveryRoute checks the headers on every route and on
// every kind of refusal, streams included.
func TestSecurityHeadersOnEveryRoute(t *testing.T) {
	f := serve(t, script.Play(script.Text("hi"), script.Text("again")))
	resp := f.post(t, "/api/threads", "")
	var created struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := created.ID
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
	}{
		{"page", "GET", "/", "", nil, 200},
		{"script", "GET", "/app.js", "", nil, 200},
		{"markdown script", "GET", "/markdown.js", "", nil, 200},
		{"style", "GET", "/app.css", "", nil, 200},
		{"unknown path", "GET", "/favicon.ico", "", nil, 404},
		{"wrong method", "PUT", "/", "", nil, 405},
		{"new thread", "POST", "/api/threads", "", nil, 201},
		{"thread", "GET", "/api/threads/" + id, "", nil, 200},
		{"missing thread", "GET", "/api/threads/nope", "", nil, 404},
		{"info", "GET", "/api/info", "", nil, 200},
		{"info on a missing thread", "GET", "/api/info?thread=nope", "", nil, 404},
		{"cancel", "POST", "/api/threads/" + id + "/cancel", "", nil, 204},
		{"chat stream", "POST", "/api/chat", chatBody(id, "hello"), nil, 200},
		{"bad chat body", "POST", "/api/chat", "{", nil, 400},
		{"decide with nothing pending", "POST", "/api/threads/" + id + "/decide", `{"decisions":[{"id":"c9","approve":true}]}`, nil, 400},
		{"foreign host", "GET", "/", "", []string{"Host", "evil.example"}, 403},
		{"cross-origin post", "POST", "/api/threads", "", []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, f.srv.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			for i := 0; i+1 < len(c.hdr); i += 2 {
				if c.hdr[i] == "Host" {
					req.Host = c.hdr[i+1]
					continue
				}
				req.Header.Set(c.hdr[i], c.hdr[i+1])
			}
			resp, err := f.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			for k, want := range securityHeaders {
				if got := resp.Header.Values(k); len(got) != 1 || got[0] != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
		})
	}
}

// TestPageHasNothingInline: the embedded page works under script-src and
// style-src 'self' only because it has no inline script, style or event
// handler; the browser tests show it working, this names what to avoid.
func TestPageHasNothingInline(t *testing.T) {
	f := serve(t, script.Play())
	for _, path := range []string{"/", "/markdown.js", "/app.js"} {
		resp, err := f.srv.Client().Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text := string(b)
		for _, bad := range []string{"<style", "style=", " onclick", " onload", " onsubmit", "javascript:", "eval(", "new Function", "innerHTML", "setAttribute(\"style", ".cssText"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s contains %q, which the Content-Security-Policy blocks", path, bad)
			}
		}
		if path == "/" && strings.Count(text, "<script") != strings.Count(text, "<script src=") {
			t.Errorf("%s has an inline <script>", path)
		}
	}
}

// TestNewChecksBoundOptions: a negative write timeout or byte buffer is an
// error naming the option; zero is the default.
func TestNewChecksBoundOptions(t *testing.T) {
	_, err := web.New(script.Play(), ledger.Store(nil), web.WithWriteTimeout(-time.Second), web.WithStreamBufferBytes(-5))
	if !errors.Is(err, web.ErrOption) {
		t.Fatalf("New: %v, want ErrOption", err)
	}
	for _, want := range []string{"web: invalid option: WithWriteTimeout(-1s): want 0 (default) or more", "web: invalid option: WithStreamBufferBytes(-5): want 0 (default) or more"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v: does not say %q", err, want)
		}
	}
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err := web.New(script.Play(), store, web.WithWriteTimeout(0), web.WithStreamBufferBytes(0))
	if err != nil {
		t.Fatalf("New with zero bounds: %v", err)
	}
	h.Close()
}
