package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/ledgertest"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

func testLoop(t *testing.T, open Opener) {
	s := open(t)
	watcher := open(t)
	st := ledgertest.Create(t, s, ledger.WithID("run"))
	ledgertest.Append(t, st, ledger.RoleUser, ledgertest.Text("what is 1+1?"))
	var seen int
	// The handler runs after the assistant turn and before the run ends:
	// another instance must already find that turn stored.
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		call, ok := a.(artifact.ToolCall)
		if !ok {
			return nil
		}
		w, err := watcher.Load(ctx, "run")
		if err != nil {
			return err
		}
		defer w.Close()
		seen = w.Len()
		e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, Content: "2"},
		}})
		return nil
	})
	prov := script.Play(script.Call("c1", "add", `{"a":1,"b":1}`), script.Text("2"))
	if _, err := loop.New(loop.WithHandlers(h)).Run(context.Background(), st, prov); err != nil {
		t.Fatal(err)
	}
	if seen != 2 {
		t.Fatalf("during the run the stored thread had %d turns, want 2 (user, assistant)", seen)
	}
	got := ledgertest.Load(t, watcher, "run")
	ledgertest.EqualTurns(t, got.Turns(), st.Turns())
	roles := make([]string, 0, got.Len())
	for _, tu := range got.Turns() {
		roles = append(roles, string(tu.Role))
	}
	if strings.Join(roles, ",") != "user,assistant,tool,assistant" {
		t.Fatalf("roles %v", roles)
	}
}

func testLoopRepair(t *testing.T, open Opener) {
	// A run that crashed between the tool call and its result.
	ledgertest.Create(t, open(t), ledger.WithID("crashed"), ledger.WithTurns(
		ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{ledgertest.Text("go")}},
		ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: "c1", Name: "slow", Arguments: "{}"}}},
	))
	st := ledgertest.Load(t, open(t), "crashed")
	if _, err := loop.New().Run(context.Background(), st, script.Play(script.Text("ok"))); err != nil {
		t.Fatal(err)
	}
	got := ledgertest.Load(t, open(t), "crashed").Turns()
	if len(got) != 4 {
		t.Fatalf("stored %s", ledgertest.Show(got))
	}
	r, ok := got[2].Artifacts[0].(artifact.ToolResult)
	if got[2].Role != ledger.RoleTool || !ok || !r.IsError || r.ToolCallID != "c1" || r.Content != loop.InterruptedMessage {
		t.Fatalf("repair turn %s", ledgertest.Show(got[2:3]))
	}
}
