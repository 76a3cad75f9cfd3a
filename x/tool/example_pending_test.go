package tool_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A tool whose work waits for a person returns a *PendingError: the run
// pauses on its call, and resuming runs it again under the decision,
// which loop.Approved hands it.
func ExamplePendingError() {
	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "transfer", Description: "Ask the bank to transfer money"},
		func(ctx context.Context, _ tool.Sandbox, _ map[string]any) (any, error) {
			if d, ok := loop.Approved(ctx); ok && d.Approved {
				return "transferred, approved by " + d.By, nil
			}
			return nil, &xtool.PendingError{Reason: "the bank asks for a second signature"}
		})
	step := loop.New(loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)))
	prov := script.Play(script.Call("call_1", "transfer", `{}`), script.Text("Sent."))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Pay the rent."})
	ctx := context.Background()
	_, err := step.Run(ctx, th, prov)
	var pe *loop.PendingError
	if errors.As(err, &pe) {
		fmt.Println("waits:", pe.Calls[0].Reason)
	}
	d := loop.Approve("call_1")
	d.By = "ana"
	if _, err := step.Resume(ctx, th, prov, []artifact.Decision{d}); err != nil {
		fmt.Println(err)
		return
	}
	for _, turn := range th.Turns() {
		for _, a := range turn.Artifacts {
			if r, ok := a.(artifact.ToolResult); ok {
				fmt.Println(r.Content)
			}
		}
	}
	// Output:
	// waits: the bank asks for a second signature
	// transferred, approved by ana
}
