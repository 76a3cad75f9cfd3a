package temporal

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lodeworks/lode/artifact"
)

// Register adds the workflow and a's activities to r under their names
// (WorkflowName, LengthName, TurnName, CallName, InterruptName,
// CommitName, ChildName, ChildEndName).
func (a *Agent) Register(r worker.Registry) {
	r.RegisterWorkflowWithOptions(Run, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterActivityWithOptions(a.Length, activity.RegisterOptions{Name: LengthName})
	r.RegisterActivityWithOptions(a.Turn, activity.RegisterOptions{Name: TurnName})
	r.RegisterActivityWithOptions(a.Call, activity.RegisterOptions{Name: CallName})
	r.RegisterActivityWithOptions(a.Interrupt, activity.RegisterOptions{Name: InterruptName})
	r.RegisterActivityWithOptions(a.Commit, activity.RegisterOptions{Name: CommitName})
	r.RegisterActivityWithOptions(a.Child, activity.RegisterOptions{Name: ChildName})
	r.RegisterActivityWithOptions(a.ChildEnd, activity.RegisterOptions{Name: ChildEndName})
}

// NewWorker returns a worker on taskQueue that runs lode's workflow with
// a's activities. Start it with Run or Start; any number of workers, on
// any machines, sharing a's store, run any thread.
func NewWorker(c client.Client, taskQueue string, a *Agent, opts worker.Options) worker.Worker {
	w := worker.New(c, taskQueue, opts)
	a.Register(w)
	return w
}

// WorkflowID is the ID Start gives the run of thread: one run per thread
// at a time.
func WorkflowID(thread string) string { return "lode-" + thread }

// Start starts the workflow on a stored thread whose prompt is appended.
func Start(ctx context.Context, c client.Client, taskQueue string, in RunInput) (client.WorkflowRun, error) {
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: WorkflowID(in.Thread), TaskQueue: taskQueue}, WorkflowName, in)
	if err != nil {
		return nil, fmt.Errorf("temporal: start thread %s: %w", in.Thread, err)
	}
	return run, nil
}

// Decide signals a decision on a call that waits in thread's run.
func Decide(ctx context.Context, c client.Client, thread string, d artifact.Decision) error {
	if err := c.SignalWorkflow(ctx, WorkflowID(thread), "", DecideSignal, d); err != nil {
		return fmt.Errorf("temporal: decide on %s in thread %s: %w", d.ToolCallID, thread, err)
	}
	return nil
}
