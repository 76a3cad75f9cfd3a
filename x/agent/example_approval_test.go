package agent_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A child keeps its caller's approval rule: the caller needs a person for
// every publish call, so the child's publish pauses the caller on its call
// to the agent; approving that call runs the child's publish, once.
func Example_approval() {
	reg := tool.NewRegistry()
	_ = reg.Register(tool.Tool{Name: "publish", Description: "Publish a post"},
		func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
			fmt.Println("published:", args["title"])
			return "published", nil
		})
	writer, err := agent.New("writer", "Write and publish a post.", agent.WithRegistry(reg),
		agent.WithProvider(script.Play(
			script.Call("w1", "publish", `{"title":"Hello"}`),
			script.Text("The post is out."),
		)))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = agent.Register(reg, writer)

	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg,
			xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalFor("publish"))),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	)
	parent := script.Play(
		script.Call("call_1", "writer", `{"task":"Publish a hello post."}`),
		script.Text("Done."),
	)
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Say hello to the world."})
	ctx := context.Background()
	_, err = step.Run(ctx, th, parent)
	var pe *loop.PendingError
	if errors.As(err, &pe) {
		fmt.Printf("waits: %s: %s\n", pe.Calls[0].Name, pe.Calls[0].Reason)
	}
	if _, err := step.Resume(ctx, th, parent, []artifact.Decision{loop.Approve(pe.Calls[0].ToolCallID)}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lastText(th))
	// Output:
	// waits: writer: the agent writer waits for approval of 1 call(s): publish {"title":"Hello"} (for the caller: the configuration requires approval for publish)
	// published: Hello
	// Done.
}
