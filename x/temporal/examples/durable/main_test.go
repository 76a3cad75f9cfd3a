package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/x/temporal"
)

// The example's agent, under the SDK's test environment: the model calls
// fetch once and answers with the page, and the thread in the store holds
// the whole run.
func TestTheAgentRunsAsAWorkflow(t *testing.T) {
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var out strings.Builder
	a, err := agent(store, &out, false)
	if err != nil {
		t.Fatal(err)
	}
	id, err := prompt(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	// The test environment runs activities inside the workflow's
	// goroutine, so its deadlock detector would time the store's writes
	// on a loaded machine.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	a.Register(env)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.RunInput{Thread: id})
	var res temporal.RunOutput
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Answer != "Fetched: the page says: hello" || res.Turns != 2 {
		t.Fatalf("result %+v", res)
	}
	if out.String() != "fetching https://example.org/\n" {
		t.Fatalf("the tool printed %q, want one fetch", out.String())
	}
	st, err := store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var roles []string
	for _, turn := range st.Turns() {
		roles = append(roles, string(turn.Role))
	}
	if got := strings.Join(roles, " "); got != "user assistant tool assistant" {
		t.Fatalf("thread roles %q", got)
	}
	last := st.Turns()[st.Len()-1].Artifacts[0]
	if txt, ok := last.(artifact.Text); !ok || txt.Content != res.Answer {
		t.Fatalf("last turn %#v", last)
	}
}

// A bad command line is refused with the usage, before any connection.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"-store", t.TempDir()}, {"worker"}} {
		err := run(context.Background(), args, &strings.Builder{})
		if err == nil || err.Error() != "usage: durable -temporal HOST:PORT -store DIR [-hang] worker | start" {
			t.Fatalf("run %q: %v", args, err)
		}
	}
	err := run(context.Background(), []string{"-store", t.TempDir(), "stop"}, &strings.Builder{})
	if err == nil || err.Error() != `unknown command "stop": want worker or start` {
		t.Fatalf("run stop: %v", err)
	}
}
