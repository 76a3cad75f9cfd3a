package loop_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
)

// One turn: the model answers, the answer lands in the ledger.
func ExampleStep_Turn() {
	prov := script.Play(script.Text("Hello! How can I help?"))
	step := loop.New(loop.WithInvokeOptions(provider.WithSystemPrompt("You are friendly.")))

	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "Hi"})
	st, err := step.Turn(context.Background(), thread, prov)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, t := range st.Turns() {
		fmt.Printf("%s: %s\n", t.Role, t.Artifacts[0].(artifact.Text).Content)
	}
	// Output:
	// user: Hi
	// assistant: Hello! How can I help?
}

// Run goes round — model, tools, model — until the model answers without
// calling a tool.
func ExampleStep_Run() {
	prov := script.Play(
		script.Call("call_1", "roll_die", `{"sides":6}`),
		script.Text("You rolled a 4."),
	)
	dice := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if call, ok := a.(artifact.ToolCall); ok {
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: call.ID, Name: call.Name, Content: "4"},
			}})
		}
		return nil
	})
	step := loop.New(loop.WithHandlers(dice), loop.WithMaxTurns(5))

	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "Roll a die for me."})
	st, err := step.Run(context.Background(), thread, prov)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, t := range st.Turns() {
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				fmt.Printf("%s: %s\n", t.Role, a.Content)
			case artifact.ToolCall:
				fmt.Printf("%s: call %s %s\n", t.Role, a.Name, a.Arguments)
			case artifact.ToolResult:
				fmt.Printf("%s: result %s\n", t.Role, a.Content)
			}
		}
	}
	// Output:
	// user: Roll a die for me.
	// assistant: call roll_die {"sides":6}
	// tool: result 4
	// assistant: You rolled a 4.
}
