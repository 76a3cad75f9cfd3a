package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// byRole offers admins every tool and others only "add"; the role
// "broken" makes it panic, as a buggy filter would.
func byRole(_ context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
	role, _ := st.Metadata(web.RoleKey)
	switch role {
	case "admin":
		return tools
	case "broken":
		panic("the filter broke")
	}
	var out []tool.Tool
	for _, t := range tools {
		if t.Name == "add" {
			out = append(out, t)
		}
	}
	return out
}

func get(t *testing.T, url string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
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

// TestInfo: GET /api/info answers the model's name and the tools the
// caller's turn would be offered, through the configured filter, on a new
// thread or on one of the caller's; another's thread is 404 and a filter
// that panics 500, and nothing is stored either way.
func TestInfo(t *testing.T) {
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reg := registry(t)
	prov := script.New([]script.Step{script.Text("hi")}, script.WithModel("scripted-1"))
	h, err := web.New(prov, store, web.WithIdentify(owner), quiet(), web.WithLoopOptions(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, byRole)),
	))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	f := &fixture{h: h, srv: srv, store: store}
	resp := f.post(t, "/api/chat", chatBody("", "hi"), "X-User", "ann", "X-Role", "guest")
	annThread := resp.Header.Get("X-Lode-Thread")
	parts(t, resp)
	all := `{"model":"scripted-1","tools":[{"name":"add","description":"adds a and b"},{"name":"boom","description":"fails"}]}` + "\n"
	one := `{"model":"scripted-1","tools":[{"name":"add","description":"adds a and b"}]}` + "\n"
	cases := []struct {
		name, query, user, role string
		code                    int
		body                    string
	}{
		{"admin, new thread", "", "bob", "admin", 200, all},
		{"guest, new thread", "", "bob", "guest", 200, one},
		{"own thread, as admin now", "?thread=" + annThread, "ann", "admin", 200, all},
		{"own thread, as guest", "?thread=" + annThread, "ann", "guest", 200, one},
		{"another's thread", "?thread=" + annThread, "bob", "admin", 404, `web: thread "` + annThread + `" not found` + "\n"},
		{"no such thread", "?thread=nope", "ann", "admin", 404, `web: thread "nope" not found` + "\n"},
		{"filter panics", "", "bob", "broken", 500, "web: the tools offered could not be listed\n"},
		{"no caller", "", "", "", 401, "web: unauthorized: no X-User header\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := get(t, srv.URL+"/api/info"+c.query, "X-User", c.user, "X-Role", c.role)
			if code != c.code || body != c.body {
				t.Errorf("GET /api/info%s: %d %q, want %d %q", c.query, code, body, c.code, c.body)
			}
		})
	}
	n := 0
	for range store.List(context.Background()) {
		n++
	}
	if got := turns(t, store, annThread); n != 1 || len(got) != 2 {
		t.Errorf("%d threads and %d turns stored, want 1 and 2", n, len(got))
	}
}

// TestStoppedAnswerReplays: a stopped answer comes back from GET
// /api/threads/{id} as its text and a data-stopped part, so a reload
// shows it as it was.
func TestStoppedAnswerReplays(t *testing.T) {
	g := newGate()
	f := serve(t, g)
	first := f.post(t, "/api/chat", chatBody("", "one"))
	id := first.Header.Get("X-Lode-Thread")
	<-g.started
	f.post(t, "/api/threads/"+id+"/cancel", "").Body.Close()
	parts(t, first)
	ps := replayParts(t, f, id)
	var got []string
	for _, p := range ps {
		got = append(got, p["type"].(string)+":"+stringOr(p["text"]))
	}
	if strings.Join(got, ",") != "step-start:,text:working,data-stopped:" {
		t.Errorf("replayed parts %v", got)
	}
}

// TestUnreachableModelSaysOneSentence: with the OpenAI adapter pointed at
// a port nothing listens on, the stream's error is one sentence, and the
// adapter's chain is the detail.
func TestUnreachableModelSaysOneSentence(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	prov, err := openai.New(openai.WithBaseURL("http://"+addr+"/v1"), openai.WithModel("m"), openai.WithAPIKey("k"), openai.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	f := serve(t, prov, quiet())
	ps := parts(t, f.post(t, "/api/chat", chatBody("", "hi")))
	last := ps[len(ps)-1]
	if last["type"] != "error" || last["errorText"] != "The model server could not be reached." {
		t.Fatalf("last part %v", last)
	}
	data, _ := find(ps, "data-error")["data"].(map[string]any)
	if detail, _ := data["detail"].(string); !strings.Contains(detail, addr) || !strings.HasPrefix(detail, "loop: provider: openai: ") {
		t.Errorf("detail %q: want the adapter's chain naming %s", detail, addr)
	}
}

// TestInfoFollowsPolicy: with an x/policy enforcer as the filter, the
// tools GET /api/info lists are those the caller's role is allowed.
func TestInfoFollowsPolicy(t *testing.T) {
	p, err := policy.Parse([]byte("roles:\n  viewer:\n    allow:\n      tools: [\"add\"]\n  admin:\n    allow:\n      tools: [\"*\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t)
	enf := policy.NewEnforcer(reg, p)
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err := web.New(script.Play(), store, web.WithIdentify(owner), quiet(), web.WithLoopOptions(
		loop.WithHandlers(xtool.NewHandler(reg, enf.HandlerOptions()...)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, enf.Filter())),
	))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	for _, c := range []struct{ role, want string }{
		{"viewer", `{"model":"","tools":[{"name":"add","description":"adds a and b"}]}`},
		{"admin", `{"model":"","tools":[{"name":"add","description":"adds a and b"},{"name":"boom","description":"fails"}]}`},
		{"", `{"model":"","tools":[]}`},
	} {
		if code, body := get(t, srv.URL+"/api/info", "X-User", "ann", "X-Role", c.role); code != 200 || body != c.want+"\n" {
			t.Errorf("role %q: %d %q, want %q", c.role, code, body, c.want)
		}
	}
}

// TestStreamErrorEventSaysTheServerFailed: an OpenAI-compatible server
// that fails mid-stream with an error event read whole is shown as the
// server failing, not as an answer that could not be read; the server's
// own message is the detail.
func TestStreamErrorEventSaysTheServerFailed(t *testing.T) {
	cases := []struct{ event, want string }{
		{`{"error":{"message":"upstream fell over","type":"server_error"}}`, "The model server failed: try again later."},
		{`{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`, "The model server is rate limiting requests: try again in a moment."},
		{`{"error":{"message":"what","type":"something_new"}}`, "The model server failed: try again later."},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"par"}}]}`+"\n\n")
			_, _ = io.WriteString(w, "data: "+c.event+"\n\n")
		}))
		prov, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithModel("m"), openai.WithAPIKey("k"), openai.WithMaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		f := serve(t, prov, quiet())
		ps := parts(t, f.post(t, "/api/chat", chatBody("", "hi")))
		last := ps[len(ps)-1]
		if last["type"] != "error" || last["errorText"] != c.want {
			t.Errorf("%s: last part %v, want %q", c.event, last, c.want)
		}
		data, _ := find(ps, "data-error")["data"].(map[string]any)
		var msg map[string]map[string]string
		_ = json.Unmarshal([]byte(c.event), &msg)
		if detail, _ := data["detail"].(string); !strings.Contains(detail, msg["error"]["message"]) {
			t.Errorf("%s: detail %q does not carry the server's message", c.event, detail)
		}
		srv.Close()
	}
}
