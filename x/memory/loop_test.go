package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// TestToolsInALoopTurn runs the tools in real turns, where the scope comes
// from the turn's thread (loop.CurrentTurn): alice saves, bob's model
// searches naming alice in its query, and finds nothing of hers.
func TestToolsInALoopTurn(t *testing.T) {
	store := openFile(t)
	defer store.Close()
	reg := tool.NewRegistry()
	if err := memory.Register(reg, store); err != nil {
		t.Fatal(err)
	}
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)), loop.WithMaxTurns(4),
		loop.WithInvokeOptions(provider.WithTools(reg.Tools())))
	var last ledger.State
	run := func(id auth.Identity, call, args string) string {
		t.Helper()
		th := ledger.NewThread(ledger.WithMetadata(id.Metadata()))
		_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hello"})
		prov := script.Play(script.Call("c1", call, args), script.Text("done"))
		st, err := step.Run(context.Background(), th, prov)
		if err != nil {
			t.Fatal(err)
		}
		last = st
		for _, turn := range st.Turns() {
			for _, a := range turn.Artifacts {
				if r, ok := a.(artifact.ToolResult); ok {
					return r.Content
				}
			}
		}
		t.Fatal("no tool result")
		return ""
	}
	if got := run(alice, memory.SaveTool, `{"fact":"Alice's locker code is 4417."}`); !strings.Contains(got, `"saved":true`) {
		t.Fatalf("alice's save: %s", got)
	}
	if _, ok := ledger.HasLabel(last, ledger.LabelPrivate); ok {
		t.Errorf("a save labelled the thread private")
	}
	if got := run(alice, memory.SearchTool, `{"query":"locker code"}`); !strings.Contains(got, "4417") {
		t.Fatalf("alice's search: %s", got)
	}
	if _, ok := ledger.HasLabel(last, ledger.LabelPrivate); !ok {
		t.Errorf("a search did not label the thread private: %v", ledger.Labels(last))
	}
	if got := run(bob, memory.SearchTool, `{"query":"alice acme locker code 4417"}`); strings.Contains(got, "4417") {
		t.Fatalf("bob found alice's fact: %s", got)
	}
	if got := run(auth.Identity{}, memory.SearchTool, `{"query":"locker code"}`); !strings.Contains(got, "no signed-in user") {
		t.Fatalf("an anonymous turn: %s", got)
	}
}
