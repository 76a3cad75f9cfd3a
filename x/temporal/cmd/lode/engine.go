package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/cli"
	"github.com/lodeworks/lode/x/temporal"
)

// engine is lode's cli.Temporal: workers over x/temporal's Agent, and
// clients that start, decide on and follow runs.
type engine struct{}

// dial connects to a's frontend; the SDK's own reports go to a.Log, only
// warnings and worse, so that a run's output stays the run's.
func dial(a *cli.Agent) (client.Client, error) {
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(a.Log, &slog.HandlerOptions{Level: slog.LevelWarn})))
	c, err := client.Dial(client.Options{HostPort: a.Address, Namespace: a.Namespace, Logger: logger,
		ContextPropagators: []workflow.ContextPropagator{temporal.TracePropagator()}})
	if err != nil {
		return nil, fmt.Errorf("temporal: cannot reach %s (namespace %s): %w", a.Address, a.Namespace, err)
	}
	return c, nil
}

func (engine) Worker(ctx context.Context, a *cli.Agent) error {
	// One lease owner for every worker: a retry of a call on another
	// worker must take over the lease the dead one held.
	agent, err := temporal.New(a.Store, a.Provider,
		temporal.WithHandler(a.Handler),
		temporal.WithLoopOptions(a.Loop...),
		temporal.WithInvokeOptions(a.Invoke...),
		temporal.WithAnswerHandlers(a.Answer...),
		temporal.WithLeaseOwner("lode worker"))
	if err != nil {
		return err
	}
	c, err := dial(a)
	if err != nil {
		return err
	}
	defer c.Close()
	w := temporal.NewWorker(c, a.TaskQueue, agent, worker.Options{})
	if err := w.Start(); err != nil {
		return fmt.Errorf("temporal: start the worker on task queue %s: %w", a.TaskQueue, err)
	}
	fmt.Fprintf(a.Log, "lode worker: running lode.yaml's agent for Temporal at %s (namespace %s, task queue %s)\n", a.Address, a.Namespace, a.TaskQueue)
	<-ctx.Done()
	// Stop waits for the activities in hand; a call that outlives the
	// worker's stop timeout is retried elsewhere, or interrupted.
	w.Stop()
	return nil
}

func (engine) Run(ctx context.Context, a *cli.Agent, thread string) error {
	c, err := dial(a)
	if err != nil {
		return err
	}
	defer c.Close()
	shown, err := length(ctx, a, thread)
	if err != nil {
		return err
	}
	run, err := temporal.Start(ctx, c, a.TaskQueue, temporal.RunInput{Thread: thread, MaxTurns: a.MaxTurns})
	if err != nil {
		return err
	}
	return follow(ctx, c, a, thread, run.GetRunID(), shown)
}

func (engine) Resume(ctx context.Context, a *cli.Agent, thread string, ds []artifact.Decision) error {
	c, err := dial(a)
	if err != nil {
		return err
	}
	defer c.Close()
	shown, err := length(ctx, a, thread)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if err := temporal.Decide(ctx, c, thread, d); err != nil {
			return err
		}
	}
	return follow(ctx, c, a, thread, "", shown)
}

func length(ctx context.Context, a *cli.Agent, thread string) (int, error) {
	st, err := a.Store.Load(ctx, thread)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	return st.Len(), nil
}

// follow waits for the run of thread to end or pause, showing each turn
// the thread gains. It reads the workflow's history as it grows (a long
// poll, no timer): after each activity the thread is read again, and after
// each workflow task the run is asked whether it is idle with calls
// waiting, which is a pause.
func follow(ctx context.Context, c client.Client, a *cli.Agent, thread, runID string, shown int) error {
	id := temporal.WorkflowID(thread)
	// Events up to the history's length now may be old (lode resume reads
	// a paused run's whole history); only the last of them, and those that
	// come after, say what the run does now.
	desc, err := c.DescribeWorkflowExecution(ctx, id, runID)
	if err != nil {
		return fmt.Errorf("temporal: thread %s: %w", thread, err)
	}
	now := desc.GetWorkflowExecutionInfo().GetHistoryLength()
	it := c.GetWorkflowHistory(ctx, id, runID, true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return fmt.Errorf("temporal: thread %s: %w", thread, err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			if shown, err = show(ctx, a, thread, shown); err != nil {
				return err
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
			enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
			if _, err := show(ctx, a, thread, shown); err != nil {
				return err
			}
			var out temporal.RunOutput
			if err := c.GetWorkflow(ctx, id, runID).Get(ctx, &out); err != nil {
				if te, ok := temporal.AsTrip(err); ok {
					// Reported as lode run reports a trip in process.
					return te
				}
				return fmt.Errorf("temporal: thread %s: %w", thread, err)
			}
			return nil
		}
		if (ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && ev.GetEventId() >= now) || ev.GetEventId() == now {
			calls, err := paused(ctx, c, a, thread, id, runID)
			if err != nil {
				return err
			}
			if len(calls) > 0 {
				if _, err := show(ctx, a, thread, shown); err != nil {
					return err
				}
				return &loop.PendingError{Thread: thread, Calls: calls}
			}
		}
	}
	return fmt.Errorf("temporal: thread %s: the run's history ended before the run did", thread)
}

// paused returns the calls that wait when the run is idle: running, with
// no workflow task, activity or child workflow in hand, so that only a
// decision moves it on. The calls are read from the thread, the record.
func paused(ctx context.Context, c client.Client, a *cli.Agent, thread, id, runID string) ([]artifact.Pending, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, runID)
	if err != nil {
		return nil, fmt.Errorf("temporal: thread %s: %w", thread, err)
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING ||
		desc.GetPendingWorkflowTask() != nil || len(desc.GetPendingActivities()) > 0 || len(desc.GetPendingChildren()) > 0 {
		return nil, nil
	}
	st, err := a.Store.Load(ctx, thread)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return loop.Pending(st), nil
}

// show hands a.Show the turns of thread from index from on, and returns
// the thread's length.
func show(ctx context.Context, a *cli.Agent, thread string, from int) (int, error) {
	st, err := a.Store.Load(ctx, thread)
	if err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			return from, fmt.Errorf("temporal: thread %s is not in the store this command reads; workers and lode run must share one", thread)
		}
		return from, err
	}
	defer st.Close()
	turns := st.Turns()
	for _, t := range turns[min(from, len(turns)):] {
		if a.Show != nil {
			a.Show.Emit(ctx, loop.TurnCompleteEvent{Role: t.Role, Artifacts: t.Artifacts})
		}
	}
	return len(turns), nil
}
