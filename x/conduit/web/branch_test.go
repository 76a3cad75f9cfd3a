package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

// do sends a request with method and body (none when "").
func (f *fixture) do(t *testing.T, method, path, body string, hdr ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// view is GET /api/threads/{id} as the tests read it.
type view struct {
	ID       string `json:"id"`
	Branch   string `json:"branch"`
	Running  bool   `json:"running"`
	Messages []struct {
		ID       string `json:"id"`
		Role     string `json:"role"`
		Parts    []map[string]any
		Metadata struct {
			Branch *struct {
				Index    int      `json:"index"`
				Count    int      `json:"count"`
				Branches []string `json:"branches"`
			} `json:"branch"`
		} `json:"metadata"`
	} `json:"messages"`
}

func (f *fixture) view(t *testing.T, id string, hdr ...string) view {
	t.Helper()
	code, b := f.do(t, http.MethodGet, "/api/threads/"+id, "", hdr...)
	if code != http.StatusOK {
		t.Fatalf("GET thread %s: %d %s", id, code, b)
	}
	var v view
	if err := json.Unmarshal([]byte(b), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// texts are v's messages as role:text, the text parts joined.
func (v view) texts() []string {
	var out []string
	for _, m := range v.Messages {
		var b strings.Builder
		for _, p := range m.Parts {
			if p["type"] == "text" {
				b.WriteString(p["text"].(string))
			}
		}
		out = append(out, m.Role+":"+b.String())
	}
	return out
}

// branchAt is message id's branch info in v as "index/count [branches]",
// or "" when it has none.
func (v view) branchAt(id string) string {
	for _, m := range v.Messages {
		if m.ID == id && m.Metadata.Branch != nil {
			b := m.Metadata.Branch
			return fmt.Sprintf("%d/%d %v", b.Index, b.Count, b.Branches)
		}
	}
	return ""
}

// editBody is what the SDK's Chat sends for sendMessage({messageId}) of
// the message at index k of msgs (the client's messages), with text.
func editBody(id string, ids []string, text string) string {
	var ms []any
	for i, mid := range ids {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		t := "x"
		if i == len(ids)-1 {
			t = text
		}
		ms = append(ms, map[string]any{"id": mid, "role": role, "parts": []any{map[string]any{"type": "text", "text": t}}})
	}
	b, _ := json.Marshal(map[string]any{"id": id, "trigger": "submit-message", "messageId": ids[len(ids)-1], "messages": ms})
	return string(b)
}

// stored is a thread as stored: metadata and turns, times included.
func stored(t *testing.T, s ledger.Store, id string) string {
	t.Helper()
	st, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := json.Marshal(st.Turns())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// threadIDs are the IDs of every thread in s, sorted.
func threadIDs(t *testing.T, s ledger.Store) []string {
	t.Helper()
	var ids []string
	for info, err := range s.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	slices.Sort(ids)
	return ids
}

func stores(t *testing.T) map[string]func(t *testing.T) ledger.Store {
	return map[string]func(t *testing.T) ledger.Store{
		"file": func(t *testing.T) ledger.Store {
			s, err := file.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"sqlite": func(t *testing.T) ledger.Store {
			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "web.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

// TestEditAndRegenerateKeepBranches: an edit and a regenerate each fork
// the branch shown; every branch survives a new handler over the same
// store, the conversation's own turns are as they were byte for byte,
// the messages say where branches part, and switching shows another.
func TestEditAndRegenerateKeepBranches(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			prov := script.Play(script.Text("first"), script.Text("second"), script.Text("edited answer"), script.Text("regenerated"))
			f := serveStore(t, store, prov, nil, web.WithIdentify(owner), quiet())
			ann := []string{"X-User", "ann"}
			parts(t, f.post(t, "/api/chat", chatBody("c1", "one"), ann...))
			parts(t, f.post(t, "/api/chat", chatBody("c1", "two"), ann...))
			// Usage kept for the answer the edit drops, and for one it keeps.
			root, err := store.Load(t.Context(), "c1")
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range map[string]string{"lode.usage.turn-1": `{"inputTokens":1}`, "lode.usage.turn-3": `{"inputTokens":3}`} {
				if err := root.SetMetadata(k, v); err != nil {
					t.Fatal(err)
				}
			}
			root.Close()
			before := stored(t, store, "c1")

			resp := f.post(t, "/api/chat", editBody("c1", []string{"turn-0", "turn-1", "m2"}, "TWO"), ann...)
			if h := resp.Header.Get("X-Lode-Thread"); h != "c1" {
				t.Errorf("edit: X-Lode-Thread %q, want the conversation's c1", h)
			}
			ps := parts(t, resp)
			if ps[0]["messageId"] != "turn-3" || ps[0]["messageMetadata"].(map[string]any)["threadId"] != "c1" {
				t.Errorf("edit: start %v, want turn-3 of c1", ps[0])
			}
			b1 := f.view(t, "c1", ann...).Branch
			ps = parts(t, f.post(t, "/api/chat", regenerateBody("c1", ""), ann...))
			if ps[0]["messageId"] != "turn-3" {
				t.Errorf("regenerate: start %v, want turn-3", ps[0])
			}
			if got := stored(t, store, "c1"); got != before {
				t.Errorf("the conversation's own turns changed:\n got %s\nwant %s", got, before)
			}

			// A handler started anew over the store sees every branch.
			g := serveStore(t, store, script.Play(script.Text("more")), nil, web.WithIdentify(owner), quiet())
			v := g.view(t, "c1", ann...)
			b2 := v.Branch
			if b2 == "c1" || b2 == b1 || b1 == "c1" {
				t.Fatalf("branches shown: %q after the edit, %q after the regenerate; want two new ones", b1, b2)
			}
			if got, want := v.texts(), []string{"user:one", "assistant:first", "user:TWO", "assistant:regenerated"}; !slices.Equal(got, want) {
				t.Errorf("after reload: %v, want %v", got, want)
			}
			if got, want := v.branchAt("turn-2"), fmt.Sprintf("2/2 [c1 %s]", b2); got != want {
				t.Errorf("turn-2 branch %q, want %q", got, want)
			}
			if got, want := v.branchAt("turn-3"), fmt.Sprintf("2/2 [%s %s]", b1, b2); got != want {
				t.Errorf("turn-3 branch %q, want %q", got, want)
			}
			if got := v.branchAt("turn-0") + v.branchAt("turn-1"); got != "" {
				t.Errorf("turns 0 and 1 have one version, yet branch info %q", got)
			}
			// The edit's branch has its answer, and no usage of the dropped answer.
			st := loadThread(t, store, b1)
			if got := texts(st.Turns()); !slices.Equal(got, []string{"user:one", "assistant:first", "user:TWO", "assistant:edited answer"}) {
				t.Errorf("edit branch: %v", got)
			}
			if u, _ := st.Metadata("lode.usage.turn-3"); u != "" {
				t.Errorf("edit branch keeps the dropped answer's usage %q", u)
			}
			if u, _ := st.Metadata("lode.usage.turn-1"); u != `{"inputTokens":1}` {
				t.Errorf("edit branch: usage of the kept answer %q", u)
			}
			st.Close()

			// Switch to the conversation's own turns, and to the edit's.
			code, b := g.do(t, http.MethodPost, "/api/threads/c1/branch", `{"branch":"c1"}`, ann...)
			if code != http.StatusOK {
				t.Fatalf("switch: %d %s", code, b)
			}
			v = f.view(t, "c1", ann...) // the first handler reads the switch from the store
			if got, want := v.texts(), []string{"user:one", "assistant:first", "user:two", "assistant:second"}; !slices.Equal(got, want) || v.Branch != "c1" {
				t.Errorf("switched to c1: %v on %q, want %v", got, v.Branch, want)
			}
			if got, want := v.branchAt("turn-2"), fmt.Sprintf("1/2 [c1 %s]", b2); got != want {
				t.Errorf("turn-2 branch on c1 %q, want %q", got, want)
			}
			if code, b := f.do(t, http.MethodPost, "/api/threads/c1/branch", fmt.Sprintf(`{"branch":%q}`, b1), ann...); code != http.StatusOK {
				t.Fatalf("switch to %s: %d %s", b1, code, b)
			}
			// A message continues the branch shown.
			parts(t, g.post(t, "/api/chat", chatBody("c1", "three"), ann...))
			if got := g.view(t, "c1", ann...).texts(); !slices.Equal(got, []string{"user:one", "assistant:first", "user:TWO", "assistant:edited answer", "user:three", "assistant:more"}) {
				t.Errorf("message on %s: %v", b1, got)
			}
			if l := g.list(t, "ann"); len(l.Threads) != 1 || l.Threads[0].ID != "c1" || l.Threads[0].Title != "one" {
				t.Errorf("ann lists %+v, want c1 alone, titled one", l)
			}
			if got := stored(t, store, "c1"); got != before {
				t.Errorf("the conversation's own turns changed:\n got %s\nwant %s", got, before)
			}
		})
	}
}

func loadThread(t *testing.T, s ledger.Store, id string) *ledger.StoredThread {
	t.Helper()
	st, err := s.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func texts(ts []ledger.Turn) []string {
	var out []string
	for _, tn := range ts {
		var b strings.Builder
		for _, a := range tn.Artifacts {
			if x, ok := a.(artifact.Text); ok {
				b.WriteString(x.Content)
			}
		}
		out = append(out, string(tn.Role)+":"+b.String())
	}
	return out
}

// TestEditOfAPausedThread: the branch an edit makes before a call that
// waits inherits no pending approval; the branch it leaves still waits.
func TestEditOfAPausedThread(t *testing.T) {
	prov := script.Play(script.Call("c1", "add", `{"a":2,"b":3}`), script.Text("no sums then"))
	f := serveTools(t, prov, askForAdd, quiet())
	id := paused(t, f)
	ps := parts(t, f.post(t, "/api/chat", editBody(id, []string{"turn-0"}, "never mind")))
	if got := types(ps); slices.Contains(got, "data-approval") || find(ps, "text-delta")["delta"] != "no sums then" {
		t.Errorf("edit of a paused thread: %v", ps)
	}
	st := shown(t, f.store, id)
	if st.ID() == id || len(loop.Pending(st)) != 0 {
		t.Errorf("branch %s waits for %v, want a new branch waiting for nothing", st.ID(), loop.Pending(st))
	}
	st.Close()
	old := loadThread(t, f.store, id)
	if p := loop.Pending(old); len(p) != 1 || p[0].ToolCallID != "c1" {
		t.Errorf("the branch left waits for %v, want c1", p)
	}
	old.Close()
	if code, b := f.do(t, http.MethodPost, "/api/threads/"+id+"/branch", fmt.Sprintf(`{"branch":%q}`, id)); code != http.StatusOK || !strings.Contains(b, `"type":"data-approval"`) {
		t.Errorf("switch back: %d %s, want the approval shown again", code, b)
	}
}

// TestBranchBadInput: a switch, an edit or a regenerate that is refused
// answers exactly, and changes nothing: no branch, no pointer moved.
func TestBranchBadInput(t *testing.T) {
	f := serve(t, script.Play(script.Text("first"), script.Text("again"), script.Text("bob's"), script.Text("other")), web.WithIdentify(owner), quiet())
	ann := []string{"X-User", "ann"}
	parts(t, f.post(t, "/api/chat", chatBody("c1", "one"), ann...))
	parts(t, f.post(t, "/api/chat", regenerateBody("c1", ""), ann...))
	b1 := f.view(t, "c1", ann...).Branch
	parts(t, f.post(t, "/api/chat", chatBody("bob1", "hi"), "X-User", "bob"))
	parts(t, f.post(t, "/api/chat", chatBody("c2", "other"), ann...))
	ids := threadIDs(t, f.store)
	if len(ids) != 4 {
		t.Fatalf("threads %v, want c1, its branch, bob1 and c2", ids)
	}
	for _, c := range []struct {
		name, path, body, user string
		code                   int
		msg                    string
	}{
		{"another caller's conversation", "/api/threads/c1/branch", `{"branch":"c1"}`, "bob", 404, `web: thread "c1" not found`},
		{"another caller's thread", "/api/threads/c1/branch", `{"branch":"bob1"}`, "ann", 404, `web: thread "c1" has no branch "bob1"`},
		{"another conversation", "/api/threads/c1/branch", `{"branch":"c2"}`, "ann", 404, `web: thread "c1" has no branch "c2"`},
		{"no such thread", "/api/threads/c1/branch", `{"branch":"nosuch"}`, "ann", 404, `web: thread "c1" has no branch "nosuch"`},
		{"not an ID", "/api/threads/c1/branch", `{"branch":"../c2"}`, "ann", 404, `web: thread "c1" has no branch "../c2"`},
		{"a branch's own ID", "/api/threads/" + b1 + "/branch", `{"branch":"c1"}`, "ann", 404, fmt.Sprintf("web: thread %q not found", b1)},
		{"garbage", "/api/threads/c1/branch", `{"branch":`, "ann", 400, "web: the body is not valid JSON: unexpected EOF"},
		{"no branch", "/api/threads/c1/branch", `{}`, "ann", 400, `web: no branch: send {"branch": ID}, an ID from a message's metadata.branch.branches`},
		{"a branch of another conversation", "/api/threads/c2/branch", fmt.Sprintf(`{"branch":%q}`, b1), "ann", 404, fmt.Sprintf("web: thread \"c2\" has no branch %q", b1)},
		{"edit of no message of the thread", "/api/chat", editBody("c1", []string{"turn-0", "turn-1", "m2"}, "x"), "ann", 400, `web: edit: thread "c1" has no user message at 2, where message "m2" is`},
		{"regenerate of no message", "/api/chat", regenerateBody("c1", "turn-7"), "ann", 400, `web: regenerate: thread "c1" has no message "turn-7" that follows a user message`},
		{"chat on a branch's ID", "/api/chat", chatBody(b1, "sneak"), "ann", 404, fmt.Sprintf("web: thread %q not found", b1)},
		{"delete of another caller's", "/api/threads/c1", "", "bob", 404, `web: thread "c1" not found`},
	} {
		t.Run(c.name, func(t *testing.T) {
			method := http.MethodPost
			if c.body == "" {
				method = http.MethodDelete
			}
			code, b := f.do(t, method, c.path, c.body, "X-User", c.user)
			if code != c.code || b != c.msg+"\n" {
				t.Errorf("got %d %q, want %d %q", code, b, c.code, c.msg+"\n")
			}
			if got := threadIDs(t, f.store); !slices.Equal(got, ids) {
				t.Errorf("threads %v, want %v", got, ids)
			}
			if v := f.view(t, "c1", ann...); v.Branch != b1 || !slices.Equal(v.texts(), []string{"user:one", "assistant:again"}) {
				t.Errorf("c1 shows %q %v after the refusal", v.Branch, v.texts())
			}
		})
	}
	code, _ := f.do(t, http.MethodGet, "/api/threads/"+b1, "", ann...)
	if code != http.StatusNotFound {
		t.Errorf("GET of a branch by its own ID: %d, want 404", code)
	}
}

// TestBranchWhileATurnRuns: while a turn runs on a conversation's branch,
// an edit, a regenerate, a switch, a message and a delete are 409 and
// store nothing; resume and cancel by the conversation's ID reach the
// branch's turn.
func TestBranchWhileATurnRuns(t *testing.T) {
	g := newGate()
	f := serve(t, g, quiet())
	st, err := f.store.Create(t.Context(), ledger.WithID("c1"), ledger.WithMetadata(map[string]string{web.OwnerKey: ""}), ledger.WithTurns(
		ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "one"}}},
		ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "first"}}},
	))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	g2 := newGate()
	f2 := replicaOf(t, f, g2)
	// The regenerated answer runs on a new branch, held at the gate.
	live := f.post(t, "/api/chat", regenerateBody("c1", ""))
	<-g.started
	ids := threadIDs(t, f.store)
	before := stored(t, f.store, "c1")
	busy := `web: a turn is already running on thread "c1": wait for it or cancel it` + "\n"
	for _, c := range []struct{ name, method, path, body string }{
		{"edit", http.MethodPost, "/api/chat", editBody("c1", []string{"turn-0"}, "changed")},
		{"regenerate", http.MethodPost, "/api/chat", regenerateBody("c1", "")},
		{"message", http.MethodPost, "/api/chat", chatBody("c1", "two")},
		{"switch", http.MethodPost, "/api/threads/c1/branch", `{"branch":"c1"}`},
		{"delete", http.MethodDelete, "/api/threads/c1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code, b := f.do(t, c.method, c.path, c.body); code != http.StatusConflict || b != busy {
				t.Errorf("got %d %q, want 409 %q", code, b, busy)
			}
			// Another replica over the store finds the branch's lease.
			if code, b := f2.do(t, c.method, c.path, c.body); code != http.StatusConflict || !strings.Contains(b, `a turn is running on thread "c1" on another server`) {
				t.Errorf("replica: got %d %q, want 409", code, b)
			}
			if got := threadIDs(t, f.store); !slices.Equal(got, ids) {
				t.Errorf("threads %v, want %v", got, ids)
			}
			if got := stored(t, f.store, "c1"); got != before {
				t.Errorf("c1 changed: %s", got)
			}
		})
	}
	if v := f.view(t, "c1"); !v.Running || v.Branch == "c1" {
		t.Errorf("view while the branch runs: running %v on %q", v.Running, v.Branch)
	}
	if l := f2.list(t, ""); len(l.Threads) != 1 || !l.Threads[0].Running {
		t.Errorf("the replica lists %+v, want c1 running", l)
	}
	resumed := f.get(t, "/api/chat/c1/stream")
	if code, _ := f.do(t, http.MethodPost, "/api/threads/c1/cancel", ""); code != http.StatusNoContent {
		t.Errorf("cancel: %d", code)
	}
	for _, resp := range []*http.Response{live, resumed} {
		ps := parts(t, resp)
		if ps[0]["messageId"] != "turn-1" || ps[len(ps)-1]["type"] != "abort" {
			t.Errorf("stream of the cancelled branch turn: %v", ps)
		}
	}
}

func TestDeleteRemovesEveryBranch(t *testing.T) {
	f := serve(t, script.Play(script.Text("first"), script.Text("again"), script.Text("edited"), script.Text("keep")), web.WithIdentify(owner), quiet())
	ann := []string{"X-User", "ann"}
	parts(t, f.post(t, "/api/chat", chatBody("c1", "one"), ann...))
	parts(t, f.post(t, "/api/chat", regenerateBody("c1", ""), ann...))
	parts(t, f.post(t, "/api/chat", editBody("c1", []string{"turn-0"}, "uno"), ann...))
	parts(t, f.post(t, "/api/chat", chatBody("c2", "other"), ann...))
	if n := len(threadIDs(t, f.store)); n != 4 {
		t.Fatalf("%d threads, want 4", n)
	}
	if code, b := f.do(t, http.MethodDelete, "/api/threads/c1", "", ann...); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, b)
	}
	if got := threadIDs(t, f.store); !slices.Equal(got, []string{"c2"}) {
		t.Errorf("threads after delete %v, want c2 alone", got)
	}
	if code, _ := f.do(t, http.MethodGet, "/api/threads/c1", "", ann...); code != http.StatusNotFound {
		t.Errorf("GET after delete: %d, want 404", code)
	}
}
