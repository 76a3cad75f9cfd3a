package loop_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
)

// With capture on, each answer's content reaches the observers as a
// ContentEvent, in the form and with the scrubbing of the spans.
func ExampleWithCapture() {
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if ev, ok := ev.(loop.ContentEvent); ok {
			fmt.Println(ev.SystemInstructions)
			fmt.Println(ev.InputMessages)
			fmt.Println(ev.OutputMessages)
		}
	})
	step := loop.New(
		loop.WithCapture(capture.Config{On: true, Secrets: []string{"hunter2"}}),
		loop.WithObserver(obs),
		loop.WithInvokeOptions(provider.WithSystemPrompt("Be brief.")),
	)
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Is hunter2 a good password?"})
	ctx := context.Background()
	if _, err := step.Run(ctx, th, script.Play(script.Text("No."))); err != nil {
		fmt.Println(err)
	}
	_ = step.Flush(ctx)
	// Output:
	// [{"type":"text","content":"Be brief."}]
	// [{"role":"user","parts":[{"type":"text","content":"Is [REDACTED] a good password?"}]}]
	// [{"role":"assistant","parts":[{"type":"text","content":"No."}],"finish_reason":"stop"}]
}
