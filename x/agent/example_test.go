package agent_test

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A summariser agent mounted as a tool of the top-level loop: the parent
// model hands it a task, the child runs on a thread of its own, and its
// answer is the tool's result. Scripts stand in for both models.
func Example() {
	summariser, err := agent.New("summarise", "Summarise a text in one sentence.",
		agent.WithProvider(script.Play(script.Text("Go is a small, fast language."))),
		agent.WithSystemPrompt("You summarise texts in one sentence."))
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := tool.NewRegistry()
	if err := agent.Register(reg, summariser); err != nil {
		fmt.Println(err)
		return
	}

	parent := script.Play(
		script.Call("call_1", "summarise", `{"task":"Summarise: Go is an open source language that is small and fast."}`),
		script.Func(func(req *provider.Request) ([]artifact.Artifact, error) {
			last := req.Turns[len(req.Turns)-1].Artifacts[0].(artifact.ToolResult)
			return []artifact.Artifact{artifact.Text{Content: "In short: " + last.Content}}, nil
		}),
	)
	var child ledger.State
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
		loop.WithObserver(loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
			if tc, ok := ev.(loop.TurnCompleteEvent); ok && tc.Role == ledger.RoleTool {
				if o, ok := agent.OutcomeOf(tc.Artifacts[0].(artifact.ToolResult)); ok {
					child = o.State
				}
			}
		})),
	)
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "What is Go, briefly?"})
	if _, err := step.Run(context.Background(), th, parent); err != nil {
		fmt.Println(err)
		return
	}
	_ = step.Flush(context.Background())

	fmt.Println("parent:", th.Turns()[len(th.Turns())-1].Artifacts[0].(artifact.Text).Content)
	call, _ := child.Metadata(agent.MetaParentCall)
	linked, _ := th.Metadata(agent.MetaChildPrefix + call)
	fmt.Println("child thread started by", call, "linked from the parent:", linked == child.ID())
	for _, t := range child.Turns() {
		fmt.Printf("  %s: %s\n", t.Role, t.Artifacts[0].(artifact.Text).Content)
	}
	// Output:
	// parent: In short: Go is a small, fast language.
	// child thread started by call_1 linked from the parent: true
	//   system: You summarise texts in one sentence.
	//   user: Summarise: Go is an open source language that is small and fast.
	//   assistant: Go is a small, fast language.
}

type verdict struct {
	Safe   bool   `json:"safe"`
	Reason string `json:"reason"`
}

type reviewIn struct {
	Code string `json:"code" jsonschema:"description=the code to review"`
}

// A child with a typed input and a typed answer: the parent sends
// {"code": ...}, checked against the schema, and reads back JSON that
// x/output validated.
func ExampleWithOutput() {
	ans, err := output.New[verdict](output.WithMode(output.ModeTool))
	if err != nil {
		fmt.Println(err)
		return
	}
	reviewer, err := agent.New("review", "Review code for safety.",
		agent.WithProvider(script.Play(script.Call("f", output.DefaultToolName, `{"safe":false,"reason":"deletes the root"}`))),
		agent.WithInput(func(in reviewIn) (string, error) { return "Review:\n" + in.Code, nil }),
		agent.WithOutput(ans))
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := tool.NewRegistry()
	_ = agent.Register(reg, reviewer)
	fmt.Println(string(reg.Tools()[0].Schema))

	res := xtool.NewHandler(reg).Execute(context.Background(),
		artifact.ToolCall{ID: "c1", Name: "review", Arguments: `{"code":"rm -rf /"}`})
	o, _ := agent.OutcomeOf(res)
	fmt.Println(res.Content)
	fmt.Printf("%+v\n", o.Output.(verdict))
	// Output:
	// {"properties":{"code":{"type":"string","description":"the code to review"}},"additionalProperties":false,"type":"object","required":["code"]}
	// {"safe":false,"reason":"deletes the root"}
	// {Safe:false Reason:deletes the root}
}
