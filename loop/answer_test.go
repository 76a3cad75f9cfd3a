package loop_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

func TestAnswer(t *testing.T) {
	text := func(s string) artifact.Artifact { return artifact.Text{Content: s} }
	call := artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{}`}
	pause := artifact.Finish{Reason: artifact.FinishPauseTurn}
	stop := artifact.Finish{Reason: "stop"}
	type turn struct {
		role ledger.Role
		as   []artifact.Artifact
	}
	cases := []struct {
		name  string
		turns []turn
		want  string
		ok    bool
	}{
		{"empty", nil, "", false},
		{"a question only", []turn{{ledger.RoleUser, []artifact.Artifact{text("hi")}}}, "", false},
		{"an answer", []turn{{ledger.RoleUser, []artifact.Artifact{text("hi")}}, {ledger.RoleAssistant, []artifact.Artifact{text("Hel"), text("lo"), stop}}}, "Hello", true},
		{"an empty answer", []turn{{ledger.RoleUser, []artifact.Artifact{text("hi")}}, {ledger.RoleAssistant, []artifact.Artifact{stop}}}, "", true},
		{"a call waiting", []turn{{ledger.RoleUser, []artifact.Artifact{text("hi")}}, {ledger.RoleAssistant, []artifact.Artifact{text("let me"), call}}}, "", false},
		{"a result waiting", []turn{{ledger.RoleAssistant, []artifact.Artifact{call}}, {ledger.RoleTool, []artifact.Artifact{artifact.ToolResult{ToolCallID: "c1", Content: "2"}}}}, "", false},
		{"a paused answer carried on", []turn{{ledger.RoleUser, []artifact.Artifact{text("q")}}, {ledger.RoleAssistant, []artifact.Artifact{text("first "), pause}}, {ledger.RoleAssistant, []artifact.Artifact{text("second"), stop}}}, "first second", true},
		{"an earlier answer is not this one", []turn{{ledger.RoleAssistant, []artifact.Artifact{text("old"), stop}}, {ledger.RoleAssistant, []artifact.Artifact{text("new"), stop}}}, "new", true},
	}
	for _, c := range cases {
		th := ledger.NewThread()
		for _, tr := range c.turns {
			if err := th.Append(tr.role, tr.as...); err != nil {
				t.Fatal(err)
			}
		}
		got, ok := loop.Answer(th)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: Answer = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if got, ok := loop.Answer(nil); got != "" || ok {
		t.Errorf("Answer(nil) = %q, %v", got, ok)
	}
}

// Answer reads a run's final answer, without walking the turns.
func ExampleAnswer() {
	prov := script.Play(
		script.Call("call_1", "roll_die", `{"sides":6}`),
		script.Text("You rolled a 4."),
	)
	step := loop.New(loop.WithHandlers(loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, em loop.Emitter) error {
		if c, ok := a.(artifact.ToolCall); ok {
			em.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "4"},
			}})
		}
		return nil
	})))
	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "Roll a die."})
	if _, err := step.Run(context.Background(), thread, prov); err != nil {
		fmt.Println("error:", err)
		return
	}
	answer, ok := loop.Answer(thread)
	fmt.Println(answer, ok)
	// Output: You rolled a 4. true
}
