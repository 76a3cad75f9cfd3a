package web_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

type threadList struct {
	Threads []struct {
		ID      string    `json:"id"`
		Title   string    `json:"title"`
		Updated time.Time `json:"updated"`
		Running bool      `json:"running"`
	} `json:"threads"`
}

func (f *fixture) list(t *testing.T, user string) threadList {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+"/api/threads", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-User", user)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/threads: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var l threadList
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestThreadCreatedByTheClientsID(t *testing.T) {
	f := serve(t, script.Play(script.Text("one"), script.Text("two")), web.WithIdentify(owner))
	ps := parts(t, f.post(t, "/api/chat", chatBody("chat-ann-1", "hi"), "X-User", "ann"))
	if got := ps[0]["messageMetadata"].(map[string]any)["threadId"]; got != "chat-ann-1" {
		t.Fatalf("start names thread %v, want chat-ann-1", got)
	}
	st, err := f.store.Load(t.Context(), "chat-ann-1")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if o, _ := st.Metadata(web.OwnerKey); o != "ann" || st.Len() != 2 {
		t.Fatalf("thread owned by %q with %d turns, want ann's with 2", o, st.Len())
	}
	// The same ID is ann's now: bob gets 404, and nothing changes.
	resp := f.post(t, "/api/chat", chatBody("chat-ann-1", "mine"), "X-User", "bob")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob posting to ann's ID: %d, want 404", resp.StatusCode)
	}
	if n := len(turns(t, f.store, "chat-ann-1")); n != 2 {
		t.Fatalf("ann's thread has %d turns after bob's post, want 2", n)
	}
}

func TestThreadList(t *testing.T) {
	f := serve(t, script.Play(script.Text("a"), script.Text("b"), script.Text("c")), web.WithIdentify(owner))
	long := strings.Repeat("word ", 30)
	for _, c := range []struct{ id, user, text string }{
		{"t-old", "ann", "  first\n question  "},
		{"t-bob", "bob", "bob's"},
		{"t-new", "ann", long},
	} {
		parts(t, f.post(t, "/api/chat", chatBody(c.id, c.text), "X-User", c.user))
	}
	// An empty thread and one stored without a title (as before titles
	// were kept) are listed too.
	resp := f.post(t, "/api/threads", "", "X-User", "ann")
	var made struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&made); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	st, err := f.store.Create(t.Context(), ledger.WithID("t-legacy"), ledger.WithMetadata(map[string]string{web.OwnerKey: "ann"}),
		ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "from before"}}}))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	l := f.list(t, "ann")
	titles := map[string]string{}
	var ids []string
	for i, th := range l.Threads {
		titles[th.ID] = th.Title
		ids = append(ids, th.ID)
		if th.Updated.IsZero() || th.Running {
			t.Errorf("thread %s: updated %v, running %v", th.ID, th.Updated, th.Running)
		}
		if i > 0 && th.Updated.After(l.Threads[i-1].Updated) {
			t.Errorf("thread %s (%v) listed after %s (%v): want newest first", th.ID, th.Updated, l.Threads[i-1].ID, l.Threads[i-1].Updated)
		}
	}
	slices.Sort(ids)
	if want := []string{made.ID, "t-legacy", "t-new", "t-old"}; !slices.Equal(ids, sorted(want)) {
		t.Fatalf("ann lists %v, want %v", ids, sorted(want))
	}
	wantLong := strings.TrimSpace(strings.Repeat("word ", 16)) + "…"
	for id, want := range map[string]string{"t-old": "first question", "t-new": wantLong, "t-legacy": "from before", made.ID: ""} {
		if titles[id] != want {
			t.Errorf("title of %s = %q, want %q", id, titles[id], want)
		}
	}
	if b := f.list(t, "bob"); len(b.Threads) != 1 || b.Threads[0].ID != "t-bob" || b.Threads[0].Title != "bob's" {
		t.Errorf("bob lists %+v, want only t-bob", b)
	}
	if c := f.list(t, "carol"); c.Threads == nil || len(c.Threads) != 0 {
		t.Errorf("carol lists %+v, want an empty list", c)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestThreadListShowsRunning(t *testing.T) {
	g := newGate()
	f := serve(t, g, web.WithIdentify(owner))
	resp := f.post(t, "/api/chat", chatBody("busy", "wait"), "X-User", "ann")
	<-g.started
	l := f.list(t, "ann")
	if len(l.Threads) != 1 || !l.Threads[0].Running || l.Threads[0].Title != "wait" {
		t.Errorf("list while the turn runs: %+v, want busy running", l)
	}
	close(g.release)
	parts(t, resp)
	<-f.returned
	if l := f.list(t, "ann"); len(l.Threads) != 1 || l.Threads[0].Running {
		t.Errorf("list after the turn: %+v, want busy not running", l)
	}
}

// TestRefusedFirstMessageMakesNoThread: a first message refused for want
// of room (429) leaves no thread behind, by its own ID or a new one.
func TestRefusedFirstMessageMakesNoThread(t *testing.T) {
	g := newGate()
	f := serve(t, g, web.WithMaxConcurrentTurns(1), quiet())
	busy := f.post(t, "/api/chat", chatBody("busy", "wait"))
	<-g.started
	for _, id := range []string{"fresh", ""} {
		resp := f.post(t, "/api/chat", chatBody(id, "me too"))
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("id %q: %d, want 429", id, resp.StatusCode)
		}
	}
	close(g.release)
	parts(t, busy)
	if id := onlyThread(t, f); id != "busy" {
		t.Errorf("the stored thread is %q, want busy alone", id)
	}
}
