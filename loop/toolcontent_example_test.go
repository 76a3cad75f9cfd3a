package loop_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// With capture on, each tool call's arguments and result reach the
// observers as a ToolContentEvent, scrubbed as on the call's span.
func ExampleToolContentEvent() {
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if ev, ok := ev.(loop.ToolContentEvent); ok {
			fmt.Println(ev.Name, ev.Arguments, ev.Result)
		}
	})
	login := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if c, ok := a.(artifact.ToolCall); ok {
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "logged in with hunter2"}}})
		}
		return nil
	})
	step := loop.New(
		loop.WithCapture(capture.Config{On: true, Secrets: []string{"hunter2"}}),
		loop.WithObserver(obs),
		loop.WithHandlers(login),
	)
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Log in as ann."})
	ctx := context.Background()
	prov := script.Play(
		script.Reply(artifact.ToolCall{ID: "c1", Name: "login", Arguments: `{"user":"ann","password":"hunter2"}`}),
		script.Text("Done."))
	if _, err := step.Run(ctx, th, prov); err != nil {
		fmt.Println(err)
	}
	_ = step.Flush(ctx)
	// Output:
	// login {"user":"ann","password":"[REDACTED]"} "logged in with [REDACTED]"
}
