package loop_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
)

// A cost limit is kept on the request as it will be sent: here the tools
// an option adds after it make the first request too costly, and it is
// refused unsent.
func ExampleWithMaxCost_admission() {
	tools := make([]tool.Tool, 200)
	for i := range tools {
		tools[i] = tool.Tool{Name: fmt.Sprintf("tool_%d", i), Description: "Looks a record up.",
			Schema: []byte(`{"type":"object","properties":{"id":{"type":"string"}}}`)}
	}
	prov := script.New([]script.Step{script.Text("hello")}, script.WithModel("m"))
	step := loop.New(
		loop.WithPricer(perToken{"m": 0.000001}), // $1 per million tokens
		loop.WithMaxCost(0.01),
		loop.WithInvokeOptions(provider.WithTools(tools)),
	)
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
	_, err := step.Run(context.Background(), th, prov)
	var le *loop.LimitError
	fmt.Println(errors.As(err, &le), le.NextUSD > le.MaxUSD, len(prov.Requests()))
	// Output: true true 0
}
