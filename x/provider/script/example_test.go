package script_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

// A script stands in for the model: it calls a real tool, reads the
// result from the request it is sent, and answers. No network, no key,
// the same run every time.
func ExamplePlay() {
	reg := tool.NewRegistry()
	_ = tool.RegisterFunc(reg, "add", "Add two integers", func(_ context.Context, in addIn) (int, error) {
		return in.A + in.B, nil
	})

	model := script.Play(
		script.Call("call_1", "add", `{"a":2,"b":3}`),
		script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
			last := req.Turns[len(req.Turns)-1].Artifacts[0].(artifact.ToolResult)
			return []artifact.Artifact{artifact.Text{Content: "2 + 3 = " + last.Content}}, nil
		}),
	)
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	)

	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What is 2 + 3?"})
	if _, err := step.Run(context.Background(), th, model); err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, t := range th.Turns() {
		switch a := t.Artifacts[0].(type) {
		case artifact.Text:
			fmt.Printf("%s: %s\n", t.Role, a.Content)
		case artifact.ToolCall:
			fmt.Printf("%s: %s(%s)\n", t.Role, a.Name, a.Arguments)
		case artifact.ToolResult:
			fmt.Printf("%s: %s\n", t.Role, a.Content)
		}
	}
	// The script records what the model was sent.
	fmt.Println("invocations:", len(model.Requests()), "tools offered:", model.Requests()[0].Tools[0].Name)
	// Output:
	// user: What is 2 + 3?
	// assistant: add({"a":2,"b":3})
	// tool: 5
	// assistant: 2 + 3 = 5
	// invocations: 2 tools offered: add
}
