package loop_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// A run that would spend more than its limit stops with a typed error
// after the turn that reached it; what it did stays in the thread.
func ExampleWithMaxCost() {
	prices := perToken{"small-model": 0.001} // a dollar per thousand tokens; x/catalog in a real program
	prov := script.New([]script.Step{
		script.Reply(artifact.ToolCall{ID: "c1", Name: "look", Arguments: `{}`}, artifact.Usage{InputTokens: 300}),
		script.Reply(artifact.ToolCall{ID: "c2", Name: "look", Arguments: `{}`}, artifact.Usage{InputTokens: 300}),
		script.Text("done"),
	}, script.WithModel("small-model"))
	step := loop.New(loop.WithHandlers(echoTools), loop.WithPricer(prices), loop.WithMaxCost(0.25))
	thread := userThread("look twice")
	_, err := step.Run(context.Background(), thread, prov)
	var limit *loop.LimitError
	if errors.As(err, &limit) && limit.Limit == loop.LimitCost {
		fmt.Printf("stopped at $%.2f of $%.2f, %d turns kept\n", limit.UsedUSD, limit.MaxUSD, len(thread.Turns()))
	}
	// Output: stopped at $0.30 of $0.25, 3 turns kept
}
