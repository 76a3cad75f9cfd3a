package loop_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// paused is an answer the server paused in the middle of its own search,
// as Anthropic's server tools end one.
func paused(text string) script.Step {
	return script.Reply(
		artifact.Text{Content: text},
		artifact.Opaque{Provider: "anthropic", Type: "server_tool_use", Data: `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}}`},
		artifact.Finish{Reason: artifact.FinishPauseTurn},
	)
}

func TestPausedAnswerCarriedOn(t *testing.T) {
	prov := script.Play(paused("Searching."), paused("Still searching."), script.Reply(artifact.Text{Content: "Found it."}, artifact.Finish{Reason: "stop"}))
	st, err := loop.New(loop.WithHandlers(echoTools)).Run(context.Background(), userThread("find it"), prov)
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(st); got != "user,assistant,assistant,assistant" {
		t.Fatalf("roles = %s", got)
	}
	reqs := prov.Requests()
	if len(reqs) != 3 {
		t.Fatalf("provider saw %d requests, want 3", len(reqs))
	}
	// Each continuation sends the thread as it stands: the paused answer
	// last, whole, as the server sent it.
	for i, want := range []int{1, 2, 3} {
		if got := len(reqs[i].Turns); got != want {
			t.Errorf("request %d had %d turns, want %d", i, got, want)
		}
	}
	last := reqs[2].Turns[2]
	if last.Role != ledger.RoleAssistant || !reflect.DeepEqual(last.Artifacts, st.Turns()[2].Artifacts) {
		t.Errorf("the last request ended with %+v, want the second paused answer", last)
	}
	if prov.Remaining() != 0 {
		t.Fatalf("%v left unplayed", prov)
	}
}

// TestPausedForever checks that a server that pauses every answer is
// stopped by the turn limit, with a *LimitError, as a model that calls
// tools forever is, and that every answer it gave is kept.
func TestPausedForever(t *testing.T) {
	var steps []script.Step
	for range 10 {
		steps = append(steps, paused("Searching."))
	}
	st, err := loop.New(loop.WithMaxTurns(4)).Run(context.Background(), userThread("find it"), script.New(steps))
	var le *loop.LimitError
	if !errors.As(err, &le) || le.Limit != loop.LimitTurns || le.Used != 4 {
		t.Fatalf("err = %v, want the turn limit at 4", err)
	}
	if got := roles(st); got != "user,assistant,assistant,assistant,assistant" {
		t.Errorf("roles = %s", got)
	}
}

// TestOtherFinishEndsTheRun checks that only a pause carries an answer on:
// a length stop or an unknown reason ends the run as a plain answer does.
func TestOtherFinishEndsTheRun(t *testing.T) {
	for _, reason := range []string{"stop", "length", "refusal", "PAUSE_TURN", ""} {
		t.Run(reason, func(t *testing.T) {
			prov := script.Play(script.Reply(artifact.Text{Content: "x"}, artifact.Finish{Reason: reason}), script.Text("never"))
			st, err := loop.New().Run(context.Background(), userThread("q"), prov)
			if err != nil || roles(st) != "user,assistant" || prov.Remaining() != 1 {
				t.Errorf("err = %v, roles = %s, %d left: want one answer", err, roles(st), prov.Remaining())
			}
		})
	}
}
