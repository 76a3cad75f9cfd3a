package web_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// serveSearch serves prov over registry's tools plus two deferred ones,
// send_invoice and book_flight, behind a tool search.
func serveSearch(t *testing.T, prov *script.Provider) *fixture {
	t.Helper()
	reg := registry(t)
	type target struct {
		To string `json:"to"`
	}
	for name, desc := range map[string]string{"send_invoice": "Email an invoice to a customer", "book_flight": "Book a flight to a city"} {
		if err := tool.RegisterFunc(reg, name, desc, func(context.Context, target) (string, error) { return "done", nil }); err != nil {
			t.Fatal(err)
		}
	}
	s, err := toolsearch.New(reg, toolsearch.Defer("send_invoice", "book_flight"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h, err := web.New(prov, store, quiet(), web.WithLoopOptions(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, s.Filter())),
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
	return &fixture{h: h, srv: srv, store: store}
}

func toolNames(ts []tool.Tool) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// TestDroppedTurnsDropTheirActivations: a regenerate, or an edit of the
// second question, forks a branch without the answer whose search loaded
// book_flight; the answer on it is offered what the kept turns loaded
// (send_invoice), not book_flight, and the branch left keeps both.
func TestDroppedTurnsDropTheirActivations(t *testing.T) {
	edit := func(id string) string {
		b, _ := json.Marshal(map[string]any{"id": id, "trigger": "submit-message", "messageId": "m2", "messages": []any{
			map[string]any{"id": "m0", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "find invoices"}}},
			map[string]any{"id": "turn-1", "role": "assistant", "parts": []any{map[string]any{"type": "text", "text": "found"}}},
			map[string]any{"id": "m2", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "no flights after all"}}},
		}})
		return string(b)
	}
	tests := []struct {
		name string
		body func(id string) string
	}{
		{"regenerate", func(id string) string { return regenerateBody(id, "") }},
		{"regenerate by message ID", func(id string) string { return regenerateBody(id, "turn-5") }},
		{"edit", edit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prov := script.Play(
				script.Call("s1", toolsearch.DefaultName, `{"query":"invoice","limit":1}`), script.Text("found"),
				script.Call("s2", toolsearch.DefaultName, `{"query":"flight","limit":1}`), script.Text("found"),
				script.Text("again"),
			)
			f := serveSearch(t, prov)
			parts(t, f.post(t, "/api/chat", chatBody("a1", "find invoices")))
			parts(t, f.post(t, "/api/chat", chatBody("a1", "and flights")))
			parts(t, f.post(t, "/api/chat", tt.body("a1")))
			reqs := prov.Requests()
			if len(reqs) != 5 {
				t.Fatalf("%d model requests, want 5", len(reqs))
			}
			if got, want := toolNames(reqs[3].Tools), []string{"add", "book_flight", "boom", "send_invoice", toolsearch.DefaultName}; !slices.Equal(got, want) {
				t.Fatalf("before the cut the model was offered %v, want %v", got, want)
			}
			if got, want := toolNames(reqs[4].Tools), []string{"add", "boom", "send_invoice", toolsearch.DefaultName}; !slices.Equal(got, want) {
				t.Errorf("the answer that replaces the dropped turns was offered %v, want %v", got, want)
			}
			st := shown(t, f.store, "a1")
			defer st.Close()
			var acts []toolsearch.Activation
			raw, _ := st.Metadata(toolsearch.MetaKey)
			if err := json.Unmarshal([]byte(raw), &acts); err != nil || len(acts) != 1 || acts[0] != (toolsearch.Activation{Tool: "send_invoice", At: 2}) {
				t.Errorf("stored activations %s (%v), want send_invoice at 2 alone", raw, err)
			}
			// The branch left keeps what its searches loaded.
			old, err := f.store.Load(t.Context(), "a1")
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			if raw, _ := old.Metadata(toolsearch.MetaKey); raw != `[{"tool":"send_invoice","at":2},{"tool":"book_flight","at":6}]` {
				t.Errorf("the branch left has activations %s, want both", raw)
			}
		})
	}
}
