package loop_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// A run pauses while a call waits for a person; Resume, here or in another
// process over the same store, records the decision and goes on.
func ExampleStep_Resume() {
	step := loop.New(loop.WithHandlers(asker)) // asker leaves "rm" to a person
	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "remove the logs"})

	_, err := step.Run(context.Background(), thread, script.Play(script.Call("call_1", "rm", `{"path":"logs"}`)))
	var pe *loop.PendingError
	if errors.As(err, &pe) {
		for _, c := range pe.Calls {
			fmt.Println("waiting:", c.Name, c.Arguments)
		}
	}
	_, err = step.Resume(context.Background(), thread, script.Play(script.Text("Removed.")),
		[]artifact.Decision{loop.Approve("call_1")})
	fmt.Println("resumed:", err)
	turns := thread.Turns()
	fmt.Println("answer:", turns[len(turns)-1].Artifacts[0].(artifact.Text).Content)
	// Output:
	// waiting: rm {"path":"logs"}
	// resumed: <nil>
	// answer: Removed.
}
