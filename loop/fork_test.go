package loop_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/ledger/ledgertest"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// A fork reloaded from its store sends the model the request its parent
// sent at the cut: the same turns, tool calls and results included.
func TestForkSendsTheParentsRequest(t *testing.T) {
	dir := t.TempDir()
	s, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	dice := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if call, ok := a.(artifact.ToolCall); ok {
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, Content: "4"},
			}})
		}
		return nil
	})
	step := loop.New(loop.WithHandlers(dice), loop.WithMaxTurns(5))

	parent, err := s.Create(ctx, ledger.WithID("parent"))
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	say := func(st ledger.State, text string) {
		if err := st.Append(ledger.RoleUser, artifact.Text{Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	say(parent, "Roll a die.")
	if _, err := step.Run(ctx, parent, script.Play(script.Call("c1", "roll_die", `{"sides":6}`), script.Text("A 4."))); err != nil {
		t.Fatal(err)
	}
	say(parent, "Again?")
	cut := parent.Len() // the parent's next request is sent with these turns
	first := script.Play(script.Text("A 2."))
	if _, err := step.Run(ctx, parent, first); err != nil {
		t.Fatal(err)
	}

	if _, err := ledger.Fork(ctx, s, "parent", cut, ledger.WithForkID("fork")); err != nil {
		t.Fatal(err)
	}
	s2, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	fork, err := s2.Load(ctx, "fork")
	if err != nil {
		t.Fatal(err)
	}
	defer fork.Close()
	second := script.Play(script.Text("A 6."))
	if _, err := step.Run(ctx, fork, second); err != nil {
		t.Fatal(err)
	}
	want, got := first.Requests()[0], second.Requests()[0]
	if len(want.Turns) != cut {
		t.Fatalf("the parent's request held %d turns, want %d", len(want.Turns), cut)
	}
	ledgertest.EqualTurns(t, got.Turns, want.Turns) // times compared with Equal
	got.Turns, want.Turns = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the fork's request differs from the parent's at the cut:\n got %+v\nwant %+v", got, want)
	}
	if n := parent.Len(); n != cut+1 || fork.Len() != cut+1 {
		t.Fatalf("parent %d turns, fork %d, want %d each", n, fork.Len(), cut+1)
	}
}
