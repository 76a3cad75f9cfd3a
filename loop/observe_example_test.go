package loop_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// An observer's queue holds at most two events here: the stream waits for
// the observer rather than queueing more, and the observer still gets
// every delta, in order, then the whole turn.
func ExampleWithObserverBuffer() {
	var got []string
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		switch ev := ev.(type) {
		case loop.DeltaEvent:
			got = append(got, ev.Delta.(artifact.TextDelta).Content)
		case loop.TurnCompleteEvent:
			got = append(got, "<"+ev.EventName()+">")
		}
	})
	step := loop.New(loop.WithObserver(obs), loop.WithObserverBuffer(2))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "count"})
	ctx := context.Background()
	if _, err := step.Run(ctx, th, script.New([]script.Step{script.Text("one two three four")}, script.WithChunkSize(4))); err != nil {
		fmt.Println(err)
	}
	if err := step.Flush(ctx); err != nil {
		fmt.Println(err)
	}
	fmt.Println(strings.Join(got, "|"))
	// Output: one |two |thre|e fo|ur|<turn_complete>
}
