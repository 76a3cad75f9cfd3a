package web_test

import (
	"slices"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/provider/script"
)

// TestPausedAnswerCarriedOn checks the web door with an answer the server
// paused (artifact.FinishPauseTurn, from Anthropic's server tools): the
// turn that carries it on streams as a second step of the same message,
// the finish is the last answer's, and both answers are stored.
func TestPausedAnswerCarriedOn(t *testing.T) {
	prov := script.Play(
		script.Reply(artifact.Text{Content: "Searching."},
			artifact.Opaque{Provider: "anthropic", Type: "server_tool_use", Data: `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}}`},
			artifact.Finish{Reason: artifact.FinishPauseTurn}),
		script.Reply(artifact.Text{Content: "Found it."}, artifact.Finish{Reason: "stop"}),
	)
	f := serve(t, prov)
	resp := f.post(t, "/api/chat", chatBody("", "find it"))
	id := resp.Header.Get("X-Lode-Thread")
	ps := parts(t, resp)
	want := []string{"start", "start-step", "text-start", "text-delta", "text-end", "finish-step",
		"start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"}
	if got := types(ps); !slices.Equal(got, want) {
		t.Fatalf("parts:\n got %v\nwant %v", got, want)
	}
	if p := find(ps, "finish"); p["finishReason"] != "stop" {
		t.Errorf("finish = %v", p)
	}
	var roles []ledger.Role
	for _, tr := range turns(t, f.store, id) {
		roles = append(roles, tr.Role)
	}
	if !slices.Equal(roles, []ledger.Role{ledger.RoleUser, ledger.RoleAssistant, ledger.RoleAssistant}) {
		t.Errorf("stored roles %v", roles)
	}
	if prov.Remaining() != 0 {
		t.Errorf("%d answers left unplayed", prov.Remaining())
	}
}
