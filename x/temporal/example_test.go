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
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
)

// The loop as a workflow. An application builds one Agent over its store,
// model and tool handler, and registers it on a worker:
//
//	w := lt.NewWorker(c, "lode", agent, worker.Options{})
//	go w.Run(worker.InterruptCh())
//	run, _ := lt.Start(ctx, c, "lode", lt.RunInput{Thread: id})
//
// Here the SDK's test environment plays the server.
func Example() {
	dir, _ := os.MkdirTemp("", "lode-temporal")
	defer os.RemoveAll(dir)
	store, _ := file.Open(dir)
	defer store.Close()
	ctx := context.Background()
	st, _ := store.Create(ctx, ledger.WithID("greeting"))
	_ = st.Append(ledger.RoleUser, artifact.Text{Content: "Say hello."})
	st.Close()

	agent, err := lt.New(store, script.Play(script.Text("Hello!")))
	if err != nil {
		fmt.Println(err)
		return
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	agent.Register(env)
	env.ExecuteWorkflow(lt.WorkflowName, lt.RunInput{Thread: "greeting"})
	var out lt.RunOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s after %d turn(s): %s\n", out.Thread, out.Turns, out.Answer)

	st, _ = store.Load(ctx, "greeting")
	for _, t := range st.Turns() {
		fmt.Println(t.Role)
	}
	// Output:
	// greeting after 1 turn(s): Hello!
	// user
	// assistant
}
