package temporal

import (
	"context"
	"fmt"
	"time"

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

// StickyTimeout is the StickyScheduleToStartTimeout NewWorker sets when
// opts leaves it zero: how long the next workflow task of a run waits for
// the worker that ran the last one before any worker takes it (the SDK's
// default is 5 s), which is what a dead worker costs a run between
// activities.
const StickyTimeout = 2 * time.Second

// NewWorker returns a worker on taskQueue that runs lode's workflow with
// a's activities. Start it with Run or Start; any number of workers, on
// any machines, sharing a's store, run any thread.
//
// Zero fields of opts that decide how fast a dead worker is noticed get
// lode's values: MaxHeartbeatThrottleInterval DefaultHeartbeat, so each
// heartbeat the activities record reaches the server (the SDK would hold
// them back for 4/5 of the heartbeat timeout), and
// StickyScheduleToStartTimeout StickyTimeout.
func NewWorker(c client.Client, taskQueue string, a *Agent, opts worker.Options) worker.Worker {
	if opts.MaxHeartbeatThrottleInterval == 0 {
		opts.MaxHeartbeatThrottleInterval = DefaultHeartbeat
	}
	if opts.StickyScheduleToStartTimeout == 0 {
		opts.StickyScheduleToStartTimeout = StickyTimeout
	}
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
