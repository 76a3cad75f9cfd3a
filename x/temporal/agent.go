package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
)

// Names under which a worker registers the workflow and its activities.
const (
	WorkflowName  = "lode.Run"
	LengthName    = "lode.Length"
	TurnName      = "lode.Turn"
	CallName      = "lode.Call"
	InterruptName = "lode.Interrupt"
)

// DefaultHeartbeat is how often a running activity heartbeats.
const DefaultHeartbeat = 5 * time.Second

// Agent holds what the activities need on every worker: the store that
// keeps the threads, the model, the handler that runs tool calls and the
// loop's options. It holds configuration only, so one Agent serves every
// run a worker is given.
type Agent struct {
	store   ledger.Store
	prov    provider.Provider
	handler loop.Handler
	turn    *loop.Step // takes model turns: no handlers
	invoke  []provider.InvokeOption
	owner   string
}

// Option configures an Agent.
type Option func(*config)

type config struct {
	handler  loop.Handler
	loopOpts []loop.Option
	invoke   []provider.InvokeOption
	owner    string
}

// WithHandler sets the handler that runs tool calls (x/tool's Handler);
// a CallChecker handler also says which calls are idempotent, and so may
// be retried. Without one, a model's tool calls get an error result.
func WithHandler(h loop.Handler) Option { return func(c *config) { c.handler = h } }

// WithLoopOptions configures the loop.Step that takes each model turn:
// observers (which see the stream inside the activity), a tracer, the
// lease. Give no handlers here: tool calls run in activities of their
// own, through WithHandler's, and a handler here would run them inside
// the model turn's.
func WithLoopOptions(o ...loop.Option) Option {
	return func(c *config) { c.loopOpts = append(c.loopOpts, o...) }
}

// WithInvokeOptions are resolved on every model turn, as loop.Step.Turn's.
func WithInvokeOptions(o ...provider.InvokeOption) Option {
	return func(c *config) { c.invoke = append(c.invoke, o...) }
}

// WithLeaseOwner prefixes the owner of the leases the activities take, as
// loop.WithLeaseOwner does. Empty means "temporal".
func WithLeaseOwner(prefix string) Option { return func(c *config) { c.owner = prefix } }

// New returns an Agent over store and prov.
func New(store ledger.Store, prov provider.Provider, opts ...Option) (*Agent, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	var errs []error
	if store == nil {
		errs = append(errs, errors.New("temporal: no ledger.Store given"))
	}
	if prov == nil {
		errs = append(errs, errors.New("temporal: no provider given"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if c.owner == "" {
		c.owner = "temporal"
	}
	stepOpts := append(append([]loop.Option{}, c.loopOpts...), loop.WithLeaseOwner(c.owner))
	return &Agent{store: store, prov: prov, handler: c.handler, turn: loop.New(stepOpts...), invoke: c.invoke, owner: c.owner}, nil
}

// TurnInput asks for the model turn that follows turn After.
type TurnInput struct {
	Thread string
	// After is the index of the last turn the workflow knows of; an
	// assistant turn stored after it means the turn already landed (the
	// activity is being retried) and the model is not asked again.
	After int
}

// CallRef is one tool call of an answer, as the workflow needs it.
type CallRef struct {
	ID, Name   string
	Idempotent bool
}

// TurnResult is a model turn as the workflow keeps it: where it is in the
// thread and the calls it made, never the transcript.
type TurnResult struct {
	At    int
	Calls []CallRef
	// Answer is the turn's text when it made no calls.
	Answer string
}

// CallInput names a call of the answer at turn At to run, with the
// decision on it when it waited for approval.
type CallInput struct {
	Thread   string
	At       int
	ID       string
	Decision *artifact.Decision
}

// CallResult is what became of a call.
type CallResult struct {
	IsError bool
	// Pending is set when the call waits for a person's decision.
	Pending *artifact.Pending
	// Len is the thread's length afterwards.
	Len int
}

// load opens a thread for one activity, closing it when done.
func (a *Agent) load(ctx context.Context, id string) (*ledger.StoredThread, error) {
	st, err := a.store.Load(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("temporal: thread %s: %w", id, err)
	}
	return st, nil
}

// heartbeat records a heartbeat every DefaultHeartbeat until stop is
// called, so that Temporal tells a live activity from a worker that died.
func heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(DefaultHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// Length is the activity that reads how many turns a thread has.
func (a *Agent) Length(ctx context.Context, thread string) (int, error) {
	st, err := a.load(ctx, thread)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	return st.Len(), nil
}

// Turn is the activity that takes one model turn on the thread: the model
// streams (to the Step's observers), and the answer is appended. A retry
// finds the answer stored and returns it without asking again.
func (a *Agent) Turn(ctx context.Context, in TurnInput) (TurnResult, error) {
	st, err := a.load(ctx, in.Thread)
	if err != nil {
		return TurnResult{}, err
	}
	defer st.Close()
	if r, ok := a.landed(st.Turns(), in.After); ok {
		return r, nil
	}
	stop := heartbeat(ctx)
	_, err = a.turn.Turn(ctx, st, a.prov, a.invoke...)
	stop()
	if err != nil {
		return TurnResult{}, fmt.Errorf("temporal: turn on thread %s: %w", in.Thread, err)
	}
	r, ok := a.landed(st.Turns(), in.After)
	if !ok {
		return TurnResult{}, fmt.Errorf("temporal: turn on thread %s: no answer was stored", in.Thread)
	}
	return r, nil
}

// landed finds the first assistant turn after index after.
func (a *Agent) landed(turns []ledger.Turn, after int) (TurnResult, bool) {
	for i := max(after+1, 0); i < len(turns); i++ {
		if turns[i].Role != ledger.RoleAssistant {
			continue
		}
		r := TurnResult{At: i}
		seen := map[string]bool{}
		for _, art := range turns[i].Artifacts {
			switch x := art.(type) {
			case artifact.ToolCall:
				if seen[x.ID] {
					continue
				}
				seen[x.ID] = true
				r.Calls = append(r.Calls, CallRef{ID: x.ID, Name: x.Name, Idempotent: a.idempotent(x)})
			case artifact.Text:
				r.Answer += x.Content
			}
		}
		return r, true
	}
	return TurnResult{}, false
}

func (a *Agent) idempotent(c artifact.ToolCall) bool {
	cc, ok := a.handler.(loop.CallChecker)
	return ok && cc.Idempotent(c)
}

// callState is what the thread says of one call after its answer.
type callState struct {
	call    artifact.ToolCall
	found   bool
	result  *artifact.ToolResult
	decided *artifact.Decision
	pending *artifact.Pending
	length  int
}

func readCall(turns []ledger.Turn, at int, id string) callState {
	cs := callState{length: len(turns)}
	if at < 0 || at >= len(turns) || turns[at].Role != ledger.RoleAssistant {
		return cs
	}
	for _, art := range turns[at].Artifacts {
		if c, ok := art.(artifact.ToolCall); ok && c.ID == id {
			cs.call, cs.found = c, true
			break
		}
	}
	for _, t := range turns[at+1:] {
		if t.Role == ledger.RoleAssistant {
			break
		}
		for _, art := range t.Artifacts {
			switch x := art.(type) {
			case artifact.ToolResult:
				if x.ToolCallID == id && cs.result == nil {
					cs.result = &x
				}
			case artifact.Decision:
				if x.ToolCallID == id {
					cs.decided = &x
				}
			case artifact.Pending:
				if x.ToolCallID == id {
					cs.pending, cs.decided = &x, nil
				}
			}
		}
	}
	return cs
}

// Call is the activity that runs one tool call through the handler and
// appends what it emits. A call that already has a result is not run
// again: a retry after the worker died past the append returns that
// result. With a Decision, the decision is recorded first (once), and a
// denied call gets the denial the model reads.
func (a *Agent) Call(ctx context.Context, in CallInput) (CallResult, error) {
	st, err := a.load(ctx, in.Thread)
	if err != nil {
		return CallResult{}, err
	}
	defer st.Close()
	cs := readCall(st.Turns(), in.At, in.ID)
	if !cs.found {
		return CallResult{}, fmt.Errorf("temporal: thread %s: turn %d has no tool call %s", in.Thread, in.At, in.ID)
	}
	if cs.result != nil {
		return CallResult{IsError: cs.result.IsError, Len: cs.length}, nil
	}
	owner, err := a.lease(ctx, st)
	if err != nil {
		return CallResult{}, err
	}
	defer func() { _ = st.ReleaseLease(context.WithoutCancel(ctx), owner) }()

	run := cs.call
	cctx := ctx
	if in.Decision != nil {
		d := *in.Decision
		d.ToolCallID, d.Name = cs.call.ID, cs.call.Name
		if !d.Approved {
			d.Arguments = ""
		}
		if cs.decided == nil {
			rec := []artifact.Artifact{d}
			if !d.Approved {
				rec = append(rec, artifact.ToolResult{ToolCallID: d.ToolCallID, Name: d.Name, IsError: true, Content: deniedMessage(d)})
			}
			if err := st.Append(ledger.RoleTool, rec...); err != nil {
				return CallResult{}, fmt.Errorf("temporal: thread %s: record decision on %s: %w", in.Thread, in.ID, err)
			}
			if !d.Approved {
				return CallResult{IsError: true, Len: st.Len()}, nil
			}
		} else {
			d = *cs.decided
			if !d.Approved {
				return CallResult{IsError: true, Len: st.Len()}, nil
			}
		}
		if d.Arguments != "" {
			run.Arguments = d.Arguments
		}
		cctx = loop.WithApproval(ctx, d)
	} else if cs.pending != nil {
		return CallResult{Pending: cs.pending, Len: cs.length}, nil
	}

	var arts []artifact.Artifact
	if a.handler == nil {
		arts = []artifact.Artifact{artifact.ToolResult{ToolCallID: run.ID, Name: run.Name, IsError: true, Content: "temporal: no handler runs tool calls on this worker"}}
	} else {
		stop := heartbeat(ctx)
		var col collect
		herr := a.handler.Handle(cctx, run, &col)
		stop()
		if herr != nil {
			// Retried by Temporal when the tool is idempotent; otherwise
			// the workflow records the call as interrupted.
			return CallResult{}, fmt.Errorf("temporal: thread %s: call %s: %w", in.Thread, in.ID, herr)
		}
		arts = col.arts
	}
	var out CallResult
	for _, art := range arts {
		switch x := art.(type) {
		case artifact.ToolResult:
			out.IsError = out.IsError || x.IsError
		case artifact.Pending:
			p := x
			out.Pending = &p
		}
	}
	if len(arts) > 0 {
		if err := st.Append(ledger.RoleTool, arts...); err != nil {
			return CallResult{}, fmt.Errorf("temporal: thread %s: call %s: %w", in.Thread, in.ID, err)
		}
	}
	out.Len = st.Len()
	return out, nil
}

// Interrupt is the activity that gives a call that failed for good (its
// worker died inside it, it timed out, its attempts ran out) the error
// result loop.InterruptedMessage, unless it has a result already.
func (a *Agent) Interrupt(ctx context.Context, in CallInput) (CallResult, error) {
	st, err := a.load(ctx, in.Thread)
	if err != nil {
		return CallResult{}, err
	}
	defer st.Close()
	defer a.releaseDead(context.WithoutCancel(ctx), st)
	cs := readCall(st.Turns(), in.At, in.ID)
	if !cs.found {
		return CallResult{}, fmt.Errorf("temporal: thread %s: turn %d has no tool call %s", in.Thread, in.At, in.ID)
	}
	if cs.result != nil {
		return CallResult{IsError: cs.result.IsError, Len: cs.length}, nil
	}
	if err := st.Append(ledger.RoleTool, artifact.ToolResult{ToolCallID: in.ID, Name: cs.call.Name, IsError: true, Content: loop.InterruptedMessage}); err != nil {
		return CallResult{}, fmt.Errorf("temporal: thread %s: interrupt %s: %w", in.Thread, in.ID, err)
	}
	return CallResult{IsError: true, Len: st.Len()}, nil
}

// lease takes the thread's lease for one call, so that lode recover and
// loop runs keep off the thread while a tool runs. Every attempt at one
// activity is the same owner, so a retry after a worker died inside the
// call takes the lease over at once instead of waiting for it to expire.
func (a *Agent) lease(ctx context.Context, st *ledger.StoredThread) (string, error) {
	owner := a.owner + "/" + ledger.NewID()[:12]
	ttl := loop.DefaultLeaseTTL
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		owner = a.owner + "/" + info.WorkflowExecution.ID + "/" + info.WorkflowExecution.RunID + "/" + info.ActivityID
		if d := info.StartToCloseTimeout; d > ttl {
			ttl = d
		}
	}
	if _, err := st.AcquireLease(ctx, owner, time.Now(), ttl); err != nil {
		return "", fmt.Errorf("temporal: thread %s: %w", st.ID(), err)
	}
	return owner, nil
}

// collect keeps the tool turns a handler emits.
type collect struct{ arts []artifact.Artifact }

func (c *collect) Emit(_ context.Context, ev loop.Event) {
	switch tc := ev.(type) {
	case loop.TurnCompleteEvent:
		if tc.Role == ledger.RoleTool {
			c.arts = append(c.arts, tc.Artifacts...)
		}
	case *loop.TurnCompleteEvent:
		if tc != nil && tc.Role == ledger.RoleTool {
			c.arts = append(c.arts, tc.Artifacts...)
		}
	}
}

// deniedMessage is what the model reads of a denied call.
func deniedMessage(d artifact.Decision) string {
	msg := fmt.Sprintf("the call to %s was denied by the person approving tool calls; it did not run", d.Name)
	if d.Reason != "" {
		msg += ". Their reason: " + d.Reason
	}
	return msg
}
