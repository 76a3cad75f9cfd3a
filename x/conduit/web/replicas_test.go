package web_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

// replicaOf serves a second Handler over f's store, as a second process
// over the same database would: its turns are not in f's handler.
func replicaOf(t *testing.T, f *fixture, prov provider.Provider, opts ...web.Option) *fixture {
	t.Helper()
	h, err := web.New(prov, f.store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		h.Close()
		srv.Close()
	})
	return &fixture{h: h, srv: srv, store: f.store}
}

func body(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// A turn holds its thread's lease in the store: a second handler over the
// same store refuses a message on it with 409, shows it running, follows
// it to its end, and takes the thread once it ended.
func TestReplicaSeesTheTurnOfAnother(t *testing.T) {
	g := newGate()
	a := serve(t, g)
	b := replicaOf(t, a, script.Play(script.Text("B answers.")))

	first := a.post(t, "/api/chat", chatBody("", "one"))
	id := first.Header.Get("X-Lode-Thread")
	<-g.started

	code, msg := body(t, b.post(t, "/api/chat", chatBody(id, "two")))
	if code != http.StatusConflict || !strings.HasPrefix(msg, fmt.Sprintf("web: a turn is running on thread %q on another server (web/", id)) ||
		!strings.HasSuffix(msg, fmt.Sprintf("): wait for it to end, or follow it with GET /api/chat/%s/stream\n", id)) {
		t.Fatalf("message on B: %d %q", code, msg)
	}
	if _, m := body(t, b.get(t, "/api/threads/"+id)); !strings.Contains(m, `"running":true`) {
		t.Fatalf("GET thread on B: %s", m)
	}
	if _, m := body(t, b.get(t, "/api/threads")); !strings.Contains(m, `"running":true`) {
		t.Fatalf("GET threads on B: %s", m)
	}
	if code, m := body(t, b.post(t, "/api/threads/"+id+"/cancel", "")); code != http.StatusConflict || !strings.Contains(m, "runs on another server") {
		t.Fatalf("cancel on B: %d %q", code, m)
	}
	if n := len(turns(t, a.store, id)); n != 1 {
		t.Fatalf("%d turns: B's refused message was stored", n)
	}

	followed := make(chan string, 1)
	go func() {
		resp, err := http.Get(b.srv.URL + "/api/chat/" + id + "/stream")
		if err != nil {
			followed <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		followed <- fmt.Sprint(resp.StatusCode, " ", string(b))
	}()
	select {
	case got := <-followed:
		t.Fatalf("the follower returned while the turn runs: %s", got)
	case <-time.After(50 * time.Millisecond): // a check that it waits, not a synchronisation
	}
	close(g.release)
	parts(t, first)
	if got := <-followed; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"delta":"working"`) {
		t.Fatalf("the follower got %q", got)
	}
	code, msg = body(t, b.post(t, "/api/chat", chatBody(id, "two")))
	if code != 200 || !strings.Contains(msg, "B answers.") {
		t.Fatalf("message on B after the turn: %d %q", code, msg)
	}
	st, err := a.store.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if l, _ := st.Lease(); l.Owner != "" || st.Len() != 4 {
		t.Fatalf("lease %+v, %d turns", l, st.Len())
	}
}

// A lease that lapsed (its process died) is taken over by the next
// message, on any handler.
func TestReplicaTakesOverALapsedLease(t *testing.T) {
	a := serve(t, script.Play(script.Text("Taken over.")), web.WithLease(time.Hour))
	st, err := a.store.Create(t.Context(), ledger.WithMetadata(map[string]string{web.OwnerKey: ""}))
	if err != nil {
		t.Fatal(err)
	}
	id := st.ID()
	// A dead owner's lease: expired a second ago.
	if _, err := st.AcquireLease(t.Context(), "web/dead/1/x", time.Now().Add(-time.Minute), 59*time.Second); err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, msg := body(t, a.post(t, "/api/chat", chatBody(id, "hello")))
	if code != 200 || !strings.Contains(msg, "Taken over.") {
		t.Fatalf("%d %q", code, msg)
	}
}

func TestWithLeaseChecked(t *testing.T) {
	_, err := web.New(script.Play(), nil, web.WithLease(-time.Second))
	if !errors.Is(err, web.ErrOption) || !strings.Contains(err.Error(), "WithLease(-1s): want 0 (default) or more") {
		t.Fatalf("New: %v", err)
	}
}
