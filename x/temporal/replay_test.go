package temporal_test

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	lt "github.com/lodeworks/lode/x/temporal"
)

// history writes a workflow history as a server records it: each
// activity scheduled, started and completed, with a workflow task between
// them; activity IDs are the IDs of their scheduled events, as the SDK
// gives them.
type history struct {
	t      *testing.T
	events []*historypb.HistoryEvent
}

func (h *history) payloads(v ...any) *commonpb.Payloads {
	p, err := converter.GetDefaultDataConverter().ToPayloads(v...)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *history) add(typ enumspb.EventType, set func(*historypb.HistoryEvent)) int64 {
	e := &historypb.HistoryEvent{EventId: int64(len(h.events) + 1), EventType: typ}
	if set != nil {
		set(e)
	}
	h.events = append(h.events, e)
	return e.EventId
}

func (h *history) start(in lt.RunInput) {
	h.add(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
			WorkflowType: &commonpb.WorkflowType{Name: lt.WorkflowName},
			TaskQueue:    &taskqueuepb.TaskQueue{Name: "lode"},
			Input:        h.payloads(in),
		}}
	})
	h.task()
}

// task is one workflow task: scheduled, started, completed.
func (h *history) task() {
	sched := h.add(enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowTaskScheduledEventAttributes{WorkflowTaskScheduledEventAttributes: &historypb.WorkflowTaskScheduledEventAttributes{
			TaskQueue: &taskqueuepb.TaskQueue{Name: "lode"},
		}}
	})
	started := h.add(enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowTaskStartedEventAttributes{WorkflowTaskStartedEventAttributes: &historypb.WorkflowTaskStartedEventAttributes{ScheduledEventId: sched}}
	})
	h.add(enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowTaskCompletedEventAttributes{WorkflowTaskCompletedEventAttributes: &historypb.WorkflowTaskCompletedEventAttributes{ScheduledEventId: sched, StartedEventId: started}}
	})
}

// activity records one activity that completed with result.
func (h *history) activity(name string, in, result any) {
	sched := h.add(enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, nil)
	h.events[sched-1].Attributes = &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
		ActivityId:   strconv.FormatInt(sched, 10),
		ActivityType: &commonpb.ActivityType{Name: name},
		TaskQueue:    &taskqueuepb.TaskQueue{Name: "lode"},
		Input:        h.payloads(in),
	}}
	started := h.add(enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{ScheduledEventId: sched, Attempt: 1}}
	})
	h.add(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
			ScheduledEventId: sched, StartedEventId: started, Result: h.payloads(result),
		}}
	})
	h.task()
}

func (h *history) complete(out lt.RunOutput) {
	last := h.events[len(h.events)-1].EventId
	h.add(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes{WorkflowExecutionCompletedEventAttributes: &historypb.WorkflowExecutionCompletedEventAttributes{
			Result: h.payloads(out), WorkflowTaskCompletedEventId: last,
		}}
	})
}

// aRun is the history of a run on thread t1: the model calls rm, the call
// runs, the model answers.
func aRun(t *testing.T, answerCalls bool) *history {
	h := &history{t: t}
	in := lt.RunInput{Thread: "t1"}
	h.start(in)
	h.activity(lt.LengthName, "t1", 1)
	first := lt.TurnResult{At: 1, Calls: []lt.CallRef{{ID: "c1", Name: "rm"}}}
	if !answerCalls {
		first = lt.TurnResult{At: 1, Answer: "no calls"}
	}
	h.activity(lt.TurnName, lt.TurnInput{Thread: "t1", After: 0}, first)
	h.activity(lt.CallName, lt.CallInput{Thread: "t1", At: 1, ID: "c1"}, lt.CallResult{Len: 3})
	h.activity(lt.TurnName, lt.TurnInput{Thread: "t1", After: 1}, lt.TurnResult{At: 3, Answer: "done"})
	h.complete(lt.RunOutput{Thread: "t1", Turns: 2, Answer: "done"})
	return h
}

func replay(t *testing.T, h *history) error {
	t.Helper()
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(lt.Run, workflow.RegisterOptions{Name: lt.WorkflowName})
	return r.ReplayWorkflowHistory(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), &historypb.History{Events: h.events})
}

// TestReplay replays recorded histories through the workflow code, as a
// worker that picks up another's run does: the same history gives the same
// commands, and a history the code would not have written is refused.
func TestReplay(t *testing.T) {
	if err := replay(t, aRun(t, true)); err != nil {
		t.Fatalf("replaying a run it wrote: %v", err)
	}
	// A first answer without calls, followed by a call: not what Run does.
	err := replay(t, aRun(t, false))
	// TMPRL1100 is the SDK's code for a nondeterminism error.
	if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("replaying a history Run would not write: %v", err)
	}
}

// TestReplayAfterAWorkerDied replays the history of a run whose worker died
// after the tool call completed: the new worker rebuilds the run's state
// from the history alone, without running any activity again.
func TestReplayAfterAWorkerDied(t *testing.T) {
	h := &history{t: t}
	h.start(lt.RunInput{Thread: "t1"})
	h.activity(lt.LengthName, "t1", 1)
	h.activity(lt.TurnName, lt.TurnInput{Thread: "t1", After: 0}, lt.TurnResult{At: 1, Calls: []lt.CallRef{{ID: "c1", Name: "rm"}}})
	h.activity(lt.CallName, lt.CallInput{Thread: "t1", At: 1, ID: "c1"}, lt.CallResult{Len: 3})
	// The worker died in the workflow task that followed: started, never
	// completed.
	h.events = h.events[:len(h.events)-1]
	if err := replay(t, h); err != nil {
		t.Fatalf("replaying a run cut short: %v", err)
	}
}

// parallel records activities scheduled in one workflow task, all of
// which completed before the next.
func (h *history) parallel(name string, ins, results []any) {
	var sched []int64
	for i := range ins {
		id := h.add(enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, nil)
		h.events[id-1].Attributes = &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
			ActivityId:   strconv.FormatInt(id, 10),
			ActivityType: &commonpb.ActivityType{Name: name},
			TaskQueue:    &taskqueuepb.TaskQueue{Name: "lode"},
			Input:        h.payloads(ins[i]),
		}}
		sched = append(sched, id)
	}
	// They complete in reverse order: the workflow's results do not depend
	// on it.
	for i := len(sched) - 1; i >= 0; i-- {
		started := h.add(enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED, func(e *historypb.HistoryEvent) {
			e.Attributes = &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{ScheduledEventId: sched[i], Attempt: 1}}
		})
		h.add(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, func(e *historypb.HistoryEvent) {
			e.Attributes = &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
				ScheduledEventId: sched[i], StartedEventId: started, Result: h.payloads(results[i]),
			}}
		})
	}
	h.task()
}

// TestReplayParallelCalls replays a run whose answer made three calls:
// they are scheduled together, and the commit follows, whatever order they
// completed in; a history that ran them one by one is not what Run writes.
func TestReplayParallelCalls(t *testing.T) {
	calls := []lt.CallRef{{ID: "c1", Name: "read", Idempotent: true, Timeout: time.Minute}, {ID: "c2", Name: "rm"}, {ID: "c3", Name: "read", Idempotent: true}}
	build := func(together bool) *history {
		h := &history{t: t}
		h.start(lt.RunInput{Thread: "t1"})
		h.activity(lt.LengthName, "t1", 1)
		h.activity(lt.TurnName, lt.TurnInput{Thread: "t1", After: 0}, lt.TurnResult{At: 1, Calls: calls})
		var ins, res []any
		for _, c := range calls {
			ins = append(ins, lt.CallInput{Thread: "t1", At: 1, ID: c.ID, Stage: true})
			res = append(res, lt.CallResult{Len: 2})
		}
		if together {
			h.parallel(lt.CallName, ins, res)
		} else {
			for i := range ins {
				h.activity(lt.CallName, ins[i], res[i])
			}
		}
		h.activity(lt.CommitName, lt.CommitInput{Thread: "t1", At: 1, IDs: []string{"c1", "c2", "c3"}}, lt.CallResult{Len: 5})
		h.activity(lt.TurnName, lt.TurnInput{Thread: "t1", After: 1}, lt.TurnResult{At: 5, Answer: "done"})
		h.complete(lt.RunOutput{Thread: "t1", Turns: 2, Answer: "done"})
		return h
	}
	if err := replay(t, build(true)); err != nil {
		t.Fatalf("replaying parallel calls: %v", err)
	}
	if err := replay(t, build(false)); err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("replaying calls run one by one: %v", err)
	}
}

// child records a child workflow started, then completed with out.
func (h *history) child(id string, in lt.RunInput, out lt.RunOutput) {
	last := h.events[len(h.events)-1].EventId
	initiated := h.add(enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_StartChildWorkflowExecutionInitiatedEventAttributes{StartChildWorkflowExecutionInitiatedEventAttributes: &historypb.StartChildWorkflowExecutionInitiatedEventAttributes{
			WorkflowId: id, WorkflowType: &commonpb.WorkflowType{Name: lt.WorkflowName},
			TaskQueue: &taskqueuepb.TaskQueue{Name: "lode"}, Input: h.payloads(in), WorkflowTaskCompletedEventId: last,
		}}
	})
	exec := &commonpb.WorkflowExecution{WorkflowId: id, RunId: "child-run"}
	started := h.add(enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_ChildWorkflowExecutionStartedEventAttributes{ChildWorkflowExecutionStartedEventAttributes: &historypb.ChildWorkflowExecutionStartedEventAttributes{
			InitiatedEventId: initiated, WorkflowExecution: exec, WorkflowType: &commonpb.WorkflowType{Name: lt.WorkflowName},
		}}
	})
	h.task()
	h.add(enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_ChildWorkflowExecutionCompletedEventAttributes{ChildWorkflowExecutionCompletedEventAttributes: &historypb.ChildWorkflowExecutionCompletedEventAttributes{
			InitiatedEventId: initiated, StartedEventId: started, WorkflowExecution: exec,
			WorkflowType: &commonpb.WorkflowType{Name: lt.WorkflowName}, Result: h.payloads(out),
		}}
	})
	h.task()
}

// TestReplayChildAgent replays a run whose model called a child agent:
// the child's start, its workflow and its end come in that order; a
// history in which the call ran as a plain activity is not what Run
// writes.
func TestReplayChildAgent(t *testing.T) {
	build := func(asChild bool) *history {
		h := &history{t: t}
		h.start(lt.RunInput{Thread: "t1"})
		h.activity(lt.LengthName, "t1", 1)
		h.activity(lt.TurnName, lt.TurnInput{Thread: "t1", After: 0}, lt.TurnResult{At: 1, Calls: []lt.CallRef{{ID: "c1", Name: "helper", Child: asChild}}})
		if asChild {
			id := lt.ChildThreadID("t1", "c1")
			h.activity(lt.ChildName, lt.ChildInput{Thread: "t1", At: 1, ID: "c1"}, lt.ChildStart{Child: id, Agent: "helper", MaxTurns: 10})
			h.child(lt.WorkflowID(id), lt.RunInput{Thread: id, Agent: "helper", MaxTurns: 10}, lt.RunOutput{Thread: id, Turns: 1, Answer: "found it"})
			h.activity(lt.ChildEndName, lt.ChildEndInput{Thread: "t1", At: 1, ID: "c1", Child: id}, lt.CallResult{Len: 3})
		} else {
			h.activity(lt.ChildName, lt.ChildInput{Thread: "t1", At: 1, ID: "c1"}, lt.ChildStart{})
		}
		h.activity(lt.TurnName, lt.TurnInput{Thread: "t1", After: 1}, lt.TurnResult{At: 3, Answer: "done"})
		h.complete(lt.RunOutput{Thread: "t1", Turns: 2, Answer: "done"})
		return h
	}
	if err := replay(t, build(true)); err != nil {
		t.Fatalf("replaying a child agent's run: %v", err)
	}
	if err := replay(t, build(false)); err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("replaying a child agent's call as a plain call: %v", err)
	}
}

// childFailed records a child workflow started, then failed at a limit
// of type typ, with details when they are not nil.
func (h *history) childFailed(id string, in lt.RunInput, typ string, details any) {
	last := h.events[len(h.events)-1].EventId
	initiated := h.add(enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_StartChildWorkflowExecutionInitiatedEventAttributes{StartChildWorkflowExecutionInitiatedEventAttributes: &historypb.StartChildWorkflowExecutionInitiatedEventAttributes{
			WorkflowId: id, WorkflowType: &commonpb.WorkflowType{Name: lt.WorkflowName},
			TaskQueue: &taskqueuepb.TaskQueue{Name: "lode"}, Input: h.payloads(in), WorkflowTaskCompletedEventId: last,
		}}
	})
	exec := &commonpb.WorkflowExecution{WorkflowId: id, RunId: "child-run"}
	started := h.add(enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_ChildWorkflowExecutionStartedEventAttributes{ChildWorkflowExecutionStartedEventAttributes: &historypb.ChildWorkflowExecutionStartedEventAttributes{
			InitiatedEventId: initiated, WorkflowExecution: exec, WorkflowType: &commonpb.WorkflowType{Name: lt.WorkflowName},
		}}
	})
	h.task()
	info := &failurepb.ApplicationFailureInfo{Type: typ, NonRetryable: true}
	if details != nil {
		info.Details = h.payloads(details)
	}
	h.add(enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_ChildWorkflowExecutionFailedEventAttributes{ChildWorkflowExecutionFailedEventAttributes: &historypb.ChildWorkflowExecutionFailedEventAttributes{
			InitiatedEventId: initiated, StartedEventId: started, WorkflowExecution: exec,
			WorkflowType: &commonpb.WorkflowType{Name: lt.WorkflowName},
			Failure:      &failurepb.Failure{Message: "temporal: thread " + id + ": the model still calls tools", FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: info}},
		}}
	})
	h.task()
}

// fail records the workflow failed at a limit of type typ.
func (h *history) fail(typ string, details any) {
	last := h.events[len(h.events)-1].EventId
	h.add(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes{WorkflowExecutionFailedEventAttributes: &historypb.WorkflowExecutionFailedEventAttributes{
			Failure: &failurepb.Failure{Message: "limit", FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{
				Type: typ, NonRetryable: true, Details: h.payloads(details)}}},
			WorkflowTaskCompletedEventId: last,
		}}
	})
}

// TestReplayChildAtItsLimits replays a parent whose child stopped at a
// limit: one written with the child's tokens and time limit, and one
// written before children carried them (the child stopped at its turns,
// its failure without details): both give the same commands.
func TestReplayChildAtItsLimits(t *testing.T) {
	id := lt.ChildThreadID("t1", "c1")
	cases := []struct {
		name    string
		start   lt.ChildStart
		in      lt.RunInput
		typ     string
		details any
		end     lt.ChildEndInput
	}{
		{"tokens", lt.ChildStart{Child: id, Agent: "helper", MaxTurns: 10, MaxTokens: 100, TimeLimit: 2 * time.Minute},
			lt.RunInput{Thread: id, Agent: "helper", MaxTurns: 10, MaxTokens: 100, TimeLimit: 2 * time.Minute}, lt.ErrTypeMaxTokens, lt.Limited{Used: 120, Max: 100},
			lt.ChildEndInput{Thread: "t1", At: 1, ID: "c1", Child: id, Failure: "limit", Limit: "tokens", Used: 120, Max: 100}},
		{"turns, before the limits were carried", lt.ChildStart{Child: id, Agent: "helper", MaxTurns: 10},
			lt.RunInput{Thread: id, Agent: "helper", MaxTurns: 10}, lt.ErrTypeMaxTurns, nil,
			lt.ChildEndInput{Thread: "t1", At: 1, ID: "c1", Child: id, Failure: "limit", MaxTurns: 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &history{t: t}
			h.start(lt.RunInput{Thread: "t1"})
			h.activity(lt.LengthName, "t1", 1)
			h.activity(lt.TurnName, lt.TurnInput{Thread: "t1", After: 0}, lt.TurnResult{At: 1, Calls: []lt.CallRef{{ID: "c1", Name: "helper", Child: true}}})
			h.activity(lt.ChildName, lt.ChildInput{Thread: "t1", At: 1, ID: "c1"}, c.start)
			h.childFailed(lt.WorkflowID(id), c.in, c.typ, c.details)
			h.activity(lt.ChildEndName, c.end, lt.CallResult{IsError: true, Len: 3})
			h.activity(lt.TurnName, lt.TurnInput{Thread: "t1", After: 1}, lt.TurnResult{At: 3, Answer: "done"})
			h.complete(lt.RunOutput{Thread: "t1", Turns: 2, Answer: "done"})
			if err := replay(t, h); err != nil {
				t.Fatalf("replaying: %v", err)
			}
		})
	}
}

// TestReplayChildRunAtItsTokens replays a child's own run that stopped at
// its tokens: the turns' tokens come from the history, so the same
// history stops at the same place; one whose turn used fewer tokens would
// have gone on, and is refused.
func TestReplayChildRunAtItsTokens(t *testing.T) {
	id := lt.ChildThreadID("t1", "c1")
	build := func(tokens int64) *history {
		h := &history{t: t}
		h.start(lt.RunInput{Thread: id, Agent: "helper", MaxTurns: 10, MaxTokens: 100})
		h.activity(lt.LengthName, id, 2)
		h.activity(lt.TurnName, lt.TurnInput{Thread: id, Agent: "helper", After: 1}, lt.TurnResult{At: 2, Calls: []lt.CallRef{{ID: "k1", Name: "read"}}, Tokens: tokens})
		h.activity(lt.CallName, lt.CallInput{Thread: id, Agent: "helper", At: 2, ID: "k1"}, lt.CallResult{Len: 4})
		h.fail(lt.ErrTypeMaxTokens, lt.Limited{Used: tokens, Max: 100})
		return h
	}
	if err := replay(t, build(120)); err != nil {
		t.Fatalf("replaying a child's run that stopped at its tokens: %v", err)
	}
	if err := replay(t, build(50)); err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("replaying a run that stopped under its tokens: %v", err)
	}
}

// marker records the version marker GetVersion writes for change id.
func (h *history) marker(id string, version int) {
	last := h.events[len(h.events)-1].EventId
	h.add(enumspb.EVENT_TYPE_MARKER_RECORDED, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
			MarkerName:                   "Version",
			Details:                      map[string]*commonpb.Payloads{"change-id": h.payloads(id), "version": h.payloads(version)},
			WorkflowTaskCompletedEventId: last,
		}}
	})
	// GetVersion upserts the TemporalChangeVersion search attribute.
	h.add(enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_UpsertWorkflowSearchAttributesEventAttributes{UpsertWorkflowSearchAttributesEventAttributes: &historypb.UpsertWorkflowSearchAttributesEventAttributes{
			WorkflowTaskCompletedEventId: last,
			SearchAttributes:             &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{"TemporalChangeVersion": h.payloads([]string{id + "-1"}).Payloads[0]}},
		}}
	})
}

// TestReplayOneToolTurnWithAChild replays a run whose answer called a
// child agent and a plain tool: written before ChangeOneToolTurn, each
// call appended its own result and the history replays so; written
// after, the calls keep their results aside and one commit appends them
// as one tool turn. A history that mixes the two is refused.
func TestReplayOneToolTurnWithAChild(t *testing.T) {
	id := lt.ChildThreadID("t1", "c1")
	build := func(marker, staged bool) *history {
		h := &history{t: t}
		h.start(lt.RunInput{Thread: "t1"})
		h.activity(lt.LengthName, "t1", 1)
		h.activity(lt.TurnName, lt.TurnInput{Thread: "t1", After: 0}, lt.TurnResult{At: 1, Calls: []lt.CallRef{{ID: "c1", Name: "helper", Child: true}, {ID: "c2", Name: "rm"}}})
		if marker {
			h.marker(lt.ChangeOneToolTurn, 1)
		}
		h.activity(lt.ChildName, lt.ChildInput{Thread: "t1", At: 1, ID: "c1", Stage: staged}, lt.ChildStart{Child: id, Agent: "helper", MaxTurns: 10})
		h.child(lt.WorkflowID(id), lt.RunInput{Thread: id, Agent: "helper", MaxTurns: 10}, lt.RunOutput{Thread: id, Turns: 1, Answer: "found it"})
		h.activity(lt.ChildEndName, lt.ChildEndInput{Thread: "t1", At: 1, ID: "c1", Child: id, Stage: staged}, lt.CallResult{Len: 2})
		h.activity(lt.CallName, lt.CallInput{Thread: "t1", At: 1, ID: "c2", Stage: staged}, lt.CallResult{Len: 2})
		if staged {
			h.activity(lt.CommitName, lt.CommitInput{Thread: "t1", At: 1, IDs: []string{"c1", "c2"}}, lt.CallResult{Len: 3})
		}
		h.activity(lt.TurnName, lt.TurnInput{Thread: "t1", After: 1}, lt.TurnResult{At: 3, Answer: "done"})
		h.complete(lt.RunOutput{Thread: "t1", Turns: 2, Answer: "done"})
		return h
	}
	if err := replay(t, build(false, false)); err != nil {
		t.Fatalf("replaying a history written before the change: %v", err)
	}
	if err := replay(t, build(true, true)); err != nil {
		t.Fatalf("replaying a history written after the change: %v", err)
	}
	if err := replay(t, build(true, false)); err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("replaying the change's marker without its commit: %v", err)
	}
}
