package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"

	"github.com/lodeworks/lode/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// registry has "add" (sums a and b) and "boom" (always fails).
func registry(t testing.TB) tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	type pair struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	if err := tool.RegisterFunc(reg, "add", "adds a and b", func(_ context.Context, p pair) (int, error) { return p.A + p.B, nil }); err != nil {
		t.Fatal(err)
	}
	if err := tool.RegisterFunc(reg, "boom", "fails", func(context.Context, struct{}) (int, error) { return 0, errors.New("it broke") }); err != nil {
		t.Fatal(err)
	}
	return reg
}

type fixture struct {
	// returned receives a value each time a POST /api/chat handler returns.
	returned chan struct{}
	h        *web.Handler
	srv      *httptest.Server
	store    ledger.Store
}

// serve starts a Handler on a loopback test server; both are closed when
// the test ends.
func serve(t testing.TB, prov provider.Provider, opts ...web.Option) *fixture {
	t.Helper()
	return serveTools(t, prov, nil, opts...)
}

// serveTools is serve with options for the tool handler.
func serveTools(t testing.TB, prov provider.Provider, hopts []xtool.HandlerOption, opts ...web.Option) *fixture {
	t.Helper()
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return serveStore(t, store, prov, hopts, opts...)
}

// serveStore is serveTools over store, which the caller closes.
func serveStore(t testing.TB, store ledger.Store, prov provider.Provider, hopts []xtool.HandlerOption, opts ...web.Option) *fixture {
	t.Helper()
	reg := registry(t)
	opts = append([]web.Option{web.WithLoopOptions(
		loop.WithHandlers(xtool.NewHandler(reg, hopts...)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	)}, opts...)
	h, err := web.New(prov, store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	returned := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.URL.Path == "/api/chat" {
			returned <- struct{}{}
		}
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		h.Close()
		srv.Close()
	})
	return &fixture{h: h, srv: srv, store: store, returned: returned}
}

func chatBody(id, text string) string {
	b, _ := json.Marshal(map[string]any{"id": id, "messages": []any{
		map[string]any{"id": "m1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}},
	}})
	return string(b)
}

func (f *fixture) post(t testing.TB, path, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// parts reads a whole stream and returns its parts; [DONE] must end it.
func parts(t testing.TB, resp *http.Response) []map[string]any {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if done {
			t.Fatalf("data after [DONE]: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(data), &p); err != nil {
			t.Fatalf("part %q: %v", data, err)
		}
		out = append(out, p)
	}
	if !done {
		t.Fatalf("the stream ended without [DONE] after %v", types(out))
	}
	return out
}

func types(ps []map[string]any) []string {
	var ts []string
	for _, p := range ps {
		ts = append(ts, p["type"].(string))
	}
	return ts
}

func find(ps []map[string]any, typ string) map[string]any {
	for _, p := range ps {
		if p["type"] == typ {
			return p
		}
	}
	return nil
}

// turns are the turns of conversation id's branch shown.
func turns(t testing.TB, s ledger.Store, id string) []ledger.Turn {
	t.Helper()
	st := shown(t, s, id)
	defer st.Close()
	return st.Turns()
}

// shown opens conversation id's branch shown (web.BranchKey), the
// conversation's own thread when it names none.
func shown(t testing.TB, s ledger.Store, id string) *ledger.StoredThread {
	t.Helper()
	st, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := st.Metadata(web.BranchKey)
	if b == "" || b == id {
		return st
	}
	st.Close()
	if st, err = s.Load(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStreamParts(t *testing.T) {
	prov := script.Play(
		script.Reply(artifact.Reasoning{Content: "sum it"}, artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":2,"b":3}`},
			artifact.ToolCall{ID: "c2", Name: "boom", Arguments: `{}`}, artifact.Usage{InputTokens: 7, OutputTokens: 3}),
		script.Reply(artifact.Text{Content: "It is 5."}, artifact.Finish{Reason: "stop"}),
	)
	f := serve(t, prov)
	resp := f.post(t, "/api/chat", chatBody("", "add 2 and 3"))
	if got := resp.Header.Get("x-vercel-ai-ui-message-stream"); got != "v1" {
		t.Errorf("x-vercel-ai-ui-message-stream = %q, want v1", got)
	}
	if got := resp.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Errorf("Content-Type = %q", got)
	}
	id := resp.Header.Get("X-Lode-Thread")
	ps := parts(t, resp)
	want := []string{
		"start", "start-step",
		"reasoning-start", "reasoning-delta", "reasoning-end",
		"tool-input-start", "tool-input-delta", "tool-input-start", "tool-input-delta",
		"tool-input-available", "tool-input-available", "data-usage", "message-metadata",
		"tool-output-available", "tool-output-error", "finish-step",
		"start-step", "text-start", "text-delta", "text-end", "finish-step", "finish",
	}
	got := types(ps)
	// The two results come as their tools finish, in either order.
	if len(got) == len(want) && got[13] == "tool-output-error" {
		got[13], got[14] = got[14], got[13]
	}
	if !slices.Equal(got, want) {
		t.Fatalf("parts:\n got %v\nwant %v", types(ps), want)
	}
	if md := ps[0]["messageMetadata"].(map[string]any); md["threadId"] != id || id == "" {
		t.Errorf("start metadata %v, header thread %q", md, id)
	}
	if p := find(ps, "tool-output-available"); p["toolCallId"] != "c1" || p["output"] != "5" {
		t.Errorf("tool-output-available = %v", p)
	}
	if p := find(ps, "tool-output-error"); p["toolCallId"] != "c2" || !strings.Contains(p["errorText"].(string), "it broke") {
		t.Errorf("tool-output-error = %v", p)
	}
	if p := find(ps, "tool-input-available"); p["input"].(map[string]any)["a"] != 2.0 {
		t.Errorf("tool-input-available = %v", p)
	}
	if p := find(ps, "finish"); p["finishReason"] != "stop" {
		t.Errorf("finish = %v", p)
	}
	if got := len(turns(t, f.store, id)); got != 4 {
		t.Errorf("stored %d turns, want 4 (user, assistant, tool, assistant)", got)
	}

	// A second message on the same thread continues it, and replay shows
	// both exchanges.
	ps = parts(t, f.post(t, "/api/chat", chatBody(id, "thanks")))
	if types(ps)[len(ps)-1] != "error" {
		// The script is exhausted: the turn fails with an error part.
		t.Errorf("after the script ran out: %v", types(ps))
	}
	if got := len(turns(t, f.store, id)); got != 5 {
		t.Errorf("stored %d turns, want 5", got)
	}
	resp, err := f.srv.Client().Get(f.srv.URL + "/api/threads/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var view struct {
		ID       string `json:"id"`
		Running  bool   `json:"running"`
		Messages []struct {
			Role  string           `json:"role"`
			Parts []map[string]any `json:"parts"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&view); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range view.Messages {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"user", "assistant", "user"}) || view.Running {
		t.Fatalf("replay roles %v running %v", roles, view.Running)
	}
	var ptypes []string
	for _, p := range view.Messages[1].Parts {
		ptypes = append(ptypes, p["type"].(string)+"/"+fmt.Sprint(p["state"]))
	}
	wantParts := []string{"step-start/<nil>", "reasoning/done", "tool-add/output-available", "tool-boom/output-error", "step-start/<nil>", "text/done"}
	if !slices.Equal(ptypes, wantParts) {
		t.Errorf("replayed parts\n got %v\nwant %v", ptypes, wantParts)
	}
}

func TestInvalidArgumentsGiveToolInputError(t *testing.T) {
	f := serve(t, script.Play(script.Call("c1", "add", `{"a":`), script.Text("sorry")))
	ps := parts(t, f.post(t, "/api/chat", chatBody("", "go")))
	p := find(ps, "tool-input-error")
	if p == nil || p["input"] != `{"a":` || p["toolName"] != "add" {
		t.Fatalf("tool-input-error = %v in %v", p, types(ps))
	}
	if find(ps, "tool-output-error") == nil {
		t.Errorf("no tool-output-error for the bad call: %v", types(ps))
	}
}

func TestProviderError(t *testing.T) {
	f := serve(t, script.Play(script.FailAfter(2, errors.New("upstream\nfell over"), artifact.Text{Content: "partial answer here"})), quiet())
	ps := parts(t, f.post(t, "/api/chat", chatBody("", "go")))
	got := types(ps)
	if got[len(got)-1] != "error" || got[len(got)-2] != "data-error" || got[len(got)-3] != "text-end" {
		t.Fatalf("parts %v: want the open text ended, then data-error and error", got)
	}
	// The error part says one sentence; the detail, on one line, has the cause.
	if msg := ps[len(ps)-1]["errorText"]; msg != "The model server's answer could not be read." {
		t.Errorf("errorText = %q", msg)
	}
	d := ps[len(ps)-2]
	data, _ := d["data"].(map[string]any)
	if detail, _ := data["detail"].(string); d["transient"] != true || data["message"] != ps[len(ps)-1]["errorText"] ||
		strings.Contains(detail, "\n") || !strings.Contains(detail, "upstream fell over") {
		t.Errorf("data-error = %v: want it transient, with the message and the cause on one line", d)
	}
}

// owner identifies callers by the X-User header ("" is refused) and gives
// the role in X-Role.
func owner(r *http.Request) (web.Identity, error) {
	u := r.Header.Get("X-User")
	if u == "" {
		return web.Identity{}, errors.New("no X-User header")
	}
	return web.Identity{Caller: u, Role: r.Header.Get("X-Role")}, nil
}

func TestBadInput(t *testing.T) {
	f := serve(t, script.Play(script.Text("hello")), web.WithIdentify(owner), web.WithMaxBodyBytes(512))
	ps := parts(t, f.post(t, "/api/chat", chatBody("", "hi"), "X-User", "ann"))
	ann := ps[0]["messageMetadata"].(map[string]any)["threadId"].(string)
	before := len(turns(t, f.store, ann))

	big := chatBody(ann, strings.Repeat("x", 600))
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		chunked                  bool
		code                     int
		msg                      string
		header                   [2]string
	}{
		{"wrong method", "GET", "/api/chat", "", []string{"X-User", "ann"}, false, 405, "Method Not Allowed", [2]string{"Allow", "POST"}},
		{"unknown path", "GET", "/api/nothing", "", nil, false, 404, "404 page not found", [2]string{}},
		{"foreign host", "POST", "/api/chat", chatBody(ann, "hi"), []string{"X-User", "ann", "Host", "evil.example"}, false, 403, `web: Host "evil.example" is not allowed`, [2]string{}},
		{"cross origin", "POST", "/api/chat", chatBody(ann, "hi"), []string{"X-User", "ann", "Sec-Fetch-Site", "cross-site"}, false, 403, "web: cross-origin request refused", [2]string{}},
		{"no identity", "POST", "/api/chat", chatBody(ann, "hi"), nil, false, 401, "web: unauthorized: no X-User header", [2]string{"WWW-Authenticate", "Bearer"}},
		{"too large", "POST", "/api/chat", big, []string{"X-User", "ann"}, false, 413, fmt.Sprintf("web: request body of %d bytes exceeds the limit of 512", len(big)), [2]string{}},
		{"too large, chunked", "POST", "/api/chat", big, []string{"X-User", "ann"}, true, 413, "web: request body exceeds the limit of 512 bytes", [2]string{}},
		{"not JSON", "POST", "/api/chat", "{nope", []string{"X-User", "ann"}, false, 400, "web: the body is not valid JSON: invalid character 'n' looking for beginning of object key string", [2]string{}},
		{"two values", "POST", "/api/chat", "{} {}", []string{"X-User", "ann"}, false, 400, "web: the body is not valid JSON: more than one JSON value", [2]string{}},
		{"no messages", "POST", "/api/chat", `{"id":"` + ann + `"}`, []string{"X-User", "ann"}, false, 400, `web: no messages: send {"id": THREAD, "messages": [{"role": "user", "parts": [{"type": "text", "text": ...}]}]}`, [2]string{}},
		{"assistant last", "POST", "/api/chat", `{"id":"` + ann + `","messages":[{"role":"assistant","parts":[{"type":"text","text":"x"}]}]}`, []string{"X-User", "ann"}, false, 400, `web: the last message has role "assistant": want "user"`, [2]string{}},
		{"no text", "POST", "/api/chat", chatBody(ann, "  "), []string{"X-User", "ann"}, false, 400, "web: the last message has no text", [2]string{}},
		{"invalid thread id", "POST", "/api/chat", chatBody("../x", "hi"), []string{"X-User", "ann"}, false, 404, `web: thread "../x" not found`, [2]string{}},
		{"another caller's thread", "POST", "/api/chat", chatBody(ann, "hi"), []string{"X-User", "bob"}, false, 404, fmt.Sprintf("web: thread %q not found", ann), [2]string{}},
		{"replay another caller's thread", "GET", "/api/threads/" + ann, "", []string{"X-User", "bob"}, false, 404, fmt.Sprintf("web: thread %q not found", ann), [2]string{}},
		{"list with no identity", "GET", "/api/threads", "", nil, false, 401, "web: unauthorized: no X-User header", [2]string{"WWW-Authenticate", "Bearer"}},
		{"replay unknown thread", "GET", "/api/threads/nosuch", "", []string{"X-User", "bob"}, false, 404, `web: thread "nosuch" not found`, [2]string{}},
		{"cancel another caller's thread", "POST", "/api/threads/" + ann + "/cancel", "", []string{"X-User", "bob"}, false, 404, fmt.Sprintf("web: thread %q not found", ann), [2]string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(c.body)
			if c.chunked {
				body = io.MultiReader(strings.NewReader(c.body)) // no length: sent chunked
			}
			req, err := http.NewRequest(c.method, f.srv.URL+c.path, body)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+1 < len(c.hdr); i += 2 {
				if c.hdr[i] == "Host" {
					req.Host = c.hdr[i+1]
				} else {
					req.Header.Set(c.hdr[i], c.hdr[i+1])
				}
			}
			resp, err := f.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.code || string(b) != c.msg+"\n" {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, b, c.code, c.msg+"\n")
			}
			if c.header[0] != "" && resp.Header.Get(c.header[0]) != c.header[1] {
				t.Errorf("%s = %q, want %q", c.header[0], resp.Header.Get(c.header[0]), c.header[1])
			}
			if got := len(turns(t, f.store, ann)); got != before {
				t.Errorf("the thread has %d turns, had %d: bad input changed it", got, before)
			}
		})
	}
	n := 0
	for _, err := range f.store.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d threads stored, want 1: bad input made threads", n)
	}
}

func TestNewChecksOptions(t *testing.T) {
	_, err := web.New(nil, nil, web.WithMaxBodyBytes(-1), web.WithStreamBuffer(-2), web.WithMaxConcurrentTurns(-3),
		web.WithDisconnect(7), web.WithAllowedHosts(" "))
	for _, want := range []error{web.ErrNoProvider, web.ErrNoStore, web.ErrOption} {
		if !errors.Is(err, want) {
			t.Errorf("New: %v, want it to wrap %v", err, want)
		}
	}
	for _, s := range []string{"WithMaxBodyBytes(-1)", "WithStreamBuffer(-2)", "WithMaxConcurrentTurns(-3)", "WithDisconnect(7)", "WithAllowedHosts: empty host name"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("New: %v: does not name %s", err, s)
		}
	}
}

// gate is a provider whose every invocation streams "working" and then
// waits for the test to release it (or for its context to end), and
// reports each start.
type gate struct {
	started chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{started: make(chan struct{}, 100), release: make(chan struct{})} }

func (g *gate) Invoke(ctx context.Context, _ *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		if !yield(artifact.TextDelta{Content: "working"}, nil) {
			return
		}
		g.started <- struct{}{}
		select {
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		case <-g.release:
		}
		if ctx.Err() != nil {
			yield(nil, ctx.Err())
			return
		}
		yield(artifact.Text{Content: "working"}, nil)
	}
}

func TestSecondTurnOnAThreadConflicts(t *testing.T) {
	g := newGate()
	f := serve(t, g)
	first := f.post(t, "/api/chat", chatBody("", "one"))
	id := first.Header.Get("X-Lode-Thread")
	<-g.started
	second := f.post(t, "/api/chat", chatBody(id, "two"))
	b, _ := io.ReadAll(second.Body)
	second.Body.Close()
	want := fmt.Sprintf("web: a turn is already running on thread %q: wait for it or cancel it\n", id)
	if second.StatusCode != http.StatusConflict || string(b) != want {
		t.Errorf("second turn: %d %q, want 409 %q", second.StatusCode, b, want)
	}
	// Cancel the first: its stream ends with abort, and the thread keeps
	// the user's message and the answer as far as it streamed, stopped.
	resp := f.post(t, "/api/threads/"+id+"/cancel", "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("cancel: %d", resp.StatusCode)
	}
	ps := parts(t, first)
	if last := ps[len(ps)-1]; last["type"] != "abort" || last["reason"] != "the turn was cancelled by the caller" {
		t.Errorf("last part %v, want abort", last)
	}
	wantTurns := []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "one"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "working"}, artifact.Finish{Reason: web.StoppedReason}}},
	}
	got := turns(t, f.store, id)
	if len(got) != len(wantTurns) {
		t.Fatalf("turns after cancel: %v", got)
	}
	for i, w := range wantTurns {
		if got[i].Role != w.Role || !slices.Equal(got[i].Artifacts, w.Artifacts) {
			t.Errorf("turn %d after cancel: %v, want %v", i, got[i], w)
		}
	}
}

func TestTooManyTurns(t *testing.T) {
	g := newGate()
	f := serve(t, g, web.WithMaxConcurrentTurns(1))
	first := f.post(t, "/api/chat", chatBody("", "one"))
	<-g.started
	second := f.post(t, "/api/chat", chatBody("", "two"))
	b, _ := io.ReadAll(second.Body)
	second.Body.Close()
	if second.StatusCode != http.StatusTooManyRequests || string(b) != "web: 1 turns are running, the most this server runs at once: retry later\n" || second.Header.Get("Retry-After") != "1" {
		t.Errorf("second turn: %d %q", second.StatusCode, b)
	}
	close(g.release)
	if ps := parts(t, first); types(ps)[len(ps)-1] != "finish" {
		t.Errorf("first turn: %v", types(ps))
	}
}

func TestRoleReachesToolFilter(t *testing.T) {
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reg := registry(t)
	var mu sync.Mutex
	var seen []string
	filter := func(_ context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
		role, _ := st.Metadata(web.RoleKey)
		mu.Lock()
		seen = append(seen, role)
		mu.Unlock()
		if role == "admin" {
			return tools
		}
		return nil
	}
	prov := script.Play(script.Text("a"), script.Text("b"))
	h, err := web.New(prov, store, web.WithIdentify(owner), web.WithLoopOptions(loop.WithInvokeOptions(xtool.WithFilteredTools(reg, filter))))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	f := &fixture{h: h, srv: srv, store: store}
	resp := f.post(t, "/api/chat", chatBody("", "hi"), "X-User", "ann", "X-Role", "admin")
	id := resp.Header.Get("X-Lode-Thread")
	parts(t, resp)
	parts(t, f.post(t, "/api/chat", chatBody(id, "again"), "X-User", "ann", "X-Role", "guest"))
	reqs := prov.Requests()
	if len(reqs) != 2 || len(reqs[0].Tools) != 2 || len(reqs[1].Tools) != 0 {
		t.Fatalf("tools offered: %d requests", len(reqs))
	}
	if !slices.Equal(seen, []string{"admin", "guest"}) {
		t.Errorf("roles the filter saw: %v", seen)
	}
}

func TestDisconnectPolicy(t *testing.T) {
	for _, c := range []struct {
		name   string
		policy web.DisconnectPolicy
		turns  int
	}{
		{"finish", web.FinishOnDisconnect, 2},
		{"cancel", web.CancelOnDisconnect, 2}, // the user's, and the stopped answer
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGate()
			f := serve(t, g, web.WithDisconnect(c.policy))
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/api/chat", strings.NewReader(chatBody("", "hi")))
			resp, err := f.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			id := resp.Header.Get("X-Lode-Thread")
			<-g.started
			cancel()
			resp.Body.Close()
			// The stream's handler returns once it has seen the browser
			// go; only then may the provider finish.
			<-f.returned
			close(g.release)
			if err := f.h.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := turns(t, f.store, id)
			if len(got) != c.turns {
				t.Fatalf("stored %d turns, want %d", len(got), c.turns)
			}
			arts := got[1].Artifacts
			_, stopped := arts[len(arts)-1].(artifact.Finish)
			if stopped != (c.policy == web.CancelOnDisconnect) {
				t.Errorf("answer stored as %v", got[1].Artifacts)
			}
		})
	}
}

func quiet() web.Option { return web.WithLogger(slog.New(slog.DiscardHandler)) }

// TestNextTurnRightAfterDone posts each message the moment the previous
// stream ended: the thread is free by the time [DONE] arrives.
func TestNextTurnRightAfterDone(t *testing.T) {
	const n = 30
	steps := make([]script.Step, n)
	for i := range steps {
		steps[i] = script.Text("ok")
	}
	f := serve(t, script.New(steps))
	id := ""
	for i := range n {
		resp := f.post(t, "/api/chat", chatBody(id, "again"))
		id = resp.Header.Get("X-Lode-Thread")
		if ps := parts(t, resp); ps[len(ps)-1]["type"] != "finish" {
			t.Fatalf("turn %d: %v", i, types(ps))
		}
	}
}
