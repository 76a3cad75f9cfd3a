package temporal_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A child agent as a child workflow: the parent's call to the agent
// "summarise" runs the child's loop as a workflow of its own, on a thread
// of its own, and the child's answer is the call's result.
func ExampleWithChildAgents() {
	dir, _ := os.MkdirTemp("", "lode-temporal")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()
	ctx := context.Background()
	st, _ := store.Create(ctx, ledger.WithID("report"))
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "Summarise the minutes."})
	st.Close()

	summarise, _ := agent.New("summarise", "Summarise a text in one sentence.",
		agent.WithProvider(script.Play(script.Text("They agreed to ship on Friday."))))
	reg := tool.NewRegistry()
	_ = agent.Register(reg, summarise)
	parent := script.Play(script.Call("c1", "summarise", `{"task":"the minutes"}`), script.Text("In short: Friday."))
	a, err := lt.New(store, parent, lt.WithHandler(xtool.NewHandler(reg)),
		lt.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)), lt.WithChildAgents(reg, summarise))
	if err != nil {
		fmt.Println(err)
		return
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	a.Register(env)
	env.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: "report"})
	var out lt.RunOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		fmt.Println(err)
		return
	}
	child, _ := store.Load(ctx, lt.ChildThreadID("report", "c1"))
	defer child.Close()
	parentAgent, _ := child.Metadata(agent.MetaParentThread)
	fmt.Println("child thread of", parentAgent, "has", child.Len(), "turns")
	st, _ = store.Load(ctx, "report")
	defer st.Close()
	for _, t := range st.Turns() {
		for _, art := range t.Artifacts {
			if r, ok := art.(artifact.ToolResult); ok {
				fmt.Println("the call's result:", r.Content)
			}
		}
	}
	fmt.Println("answer:", out.Answer)
	// Output:
	// child thread of report has 2 turns
	// the call's result: They agreed to ship on Friday.
	// answer: In short: Friday.
}
