package loop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// asker leaves calls to "rm" to a person and answers the rest.
var asker = loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	c, ok := a.(artifact.ToolCall)
	if !ok {
		return nil
	}
	var out artifact.Artifact = artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "ok"}
	if d, ok := loop.Approved(ctx); c.Name == "rm" && (!ok || d.ToolCallID != c.ID) {
		out = artifact.Pending{ToolCallID: c.ID, Name: c.Name, Arguments: c.Arguments, Reason: "destructive"}
	}
	e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{out}})
	return nil
})

func pausedThread(t *testing.T) *ledger.Thread {
	t.Helper()
	st := ledger.NewThread(ledger.WithID("t1"), ledger.WithClock(nil))
	st.Append(ledger.RoleUser, artifact.Text{Content: "go"})
	prov := script.Play(script.Reply(
		artifact.ToolCall{ID: "a", Name: "rm", Arguments: `{"p":1}`},
		artifact.ToolCall{ID: "b", Name: "ls", Arguments: `{}`},
	))
	_, err := loop.New(loop.WithHandlers(asker)).Run(context.Background(), st, prov)
	want := `loop: thread t1: 1 tool call(s) wait for approval: rm {"p":1} (a): destructive`
	var pe *loop.PendingError
	if !errors.As(err, &pe) || err.Error() != want {
		t.Fatalf("run: %v\nwant %s", err, want)
	}
	return st
}

func TestPausedThreadTakesNoTurn(t *testing.T) {
	st := pausedThread(t)
	n := st.Len()
	prov := script.Play(script.Text("never"))
	for name, run := range map[string]func() error{
		"Turn": func() error {
			_, err := loop.New(loop.WithHandlers(asker)).Turn(context.Background(), st, prov)
			return err
		},
		"Run": func() error {
			_, err := loop.New(loop.WithHandlers(asker)).Run(context.Background(), st, prov)
			return err
		},
	} {
		if err := run(); !errors.Is(err, loop.ErrPaused) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// Nothing was asked and nothing answered the pending call.
	if len(prov.Requests()) != 0 || st.Len() != n {
		t.Fatalf("%d requests, %d turns (was %d)", len(prov.Requests()), st.Len(), n)
	}
}

func TestResumeRefusesBadDecisions(t *testing.T) {
	cases := []struct {
		name string
		ds   []artifact.Decision
		want string
		is   error
	}{
		{"twice", []artifact.Decision{loop.Approve("a"), loop.Deny("a", "")}, `loop: decision on call "a": decided twice in one Resume`, nil},
		{"answered", []artifact.Decision{loop.Approve("b")}, `loop: decision on call "b": no such pending call`, loop.ErrNotPending},
		{"unknown", []artifact.Decision{loop.Approve("zz")}, `loop: decision on call "zz": no such pending call`, loop.ErrNotPending},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := pausedThread(t)
			n := st.Len()
			_, err := loop.New(loop.WithHandlers(asker)).Resume(context.Background(), st, script.Play(), c.ds)
			var de *loop.DecisionError
			if !errors.As(err, &de) || err.Error() != c.want || (c.is != nil && !errors.Is(err, c.is)) {
				t.Fatalf("err = %v, want %s", err, c.want)
			}
			if st.Len() != n {
				t.Fatal("a refused decision was recorded")
			}
		})
	}
}

func TestResumeWithoutDecisionsStaysPaused(t *testing.T) {
	st := pausedThread(t)
	prov := script.Play(script.Text("never"))
	_, err := loop.New(loop.WithHandlers(asker)).Resume(context.Background(), st, prov, nil)
	if !errors.Is(err, loop.ErrPaused) || len(prov.Requests()) != 0 {
		t.Fatalf("resume without decisions: %v", err)
	}
	if got := loop.Pending(st); len(got) != 1 || got[0].ToolCallID != "a" {
		t.Fatalf("pending %v", got)
	}
}
