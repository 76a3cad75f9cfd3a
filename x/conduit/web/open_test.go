package web_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
)

// creations counts a store's Create calls.
type creations struct {
	ledger.Store
	n atomic.Int32
}

func (c *creations) Create(ctx context.Context, opts ...ledger.ThreadOption) (*ledger.StoredThread, error) {
	c.n.Add(1)
	return c.Store.Create(ctx, opts...)
}

// TestNamedThreadCreatedOnce: a chat the client names is created by its
// first message; the later ones load it and try no create, which on the
// file store would make, fsync and remove a journal only to conflict.
// Another caller's message on it is 404, creating nothing.
func TestNamedThreadCreatedOnce(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			store := &creations{Store: open(t)}
			prov := script.Play(script.Text("first"), script.Text("second"), script.Text("third"))
			f := serveStore(t, store, prov, nil, web.WithIdentify(owner), quiet())
			ann := []string{"X-User", "ann"}
			for _, text := range []string{"one", "two", "three"} {
				parts(t, f.post(t, "/api/chat", chatBody("c1", text), ann...))
				<-f.returned
			}
			if n := store.n.Load(); n != 1 {
				t.Fatalf("%d creates for three messages, want 1", n)
			}
			resp := f.post(t, "/api/chat", chatBody("c1", "mine?"), "X-User", "bob")
			resp.Body.Close()
			if resp.StatusCode != 404 {
				t.Fatalf("another caller: status %d, want 404", resp.StatusCode)
			}
			if n := store.n.Load(); n != 1 {
				t.Fatalf("%d creates after another caller's message, want 1", n)
			}
			st := loadThread(t, store, "c1")
			defer st.Close()
			if st.Len() != 6 {
				t.Fatalf("%d turns stored, want 6", st.Len())
			}
		})
	}
}
