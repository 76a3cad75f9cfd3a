package temporal

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	sdk "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
)

// Signal and query names of the workflow.
const (
	// DecideSignal carries one artifact.Decision on a call that waits.
	DecideSignal = "lode.decide"
	// PendingQuery returns the []artifact.Pending that wait for a decision.
	PendingQuery = "lode.pending"
)

// ChangeOneToolTurn is the workflow.GetVersion change ID under which a
// turn whose calls include a child agent's, run one by one, commits
// their results as one tool turn (version 1) rather than one turn per
// call (workflow.DefaultVersion, the histories written before).
const ChangeOneToolTurn = "lode.one-tool-turn"

// RetryInterval is how long Temporal waits before it retries an activity
// that failed or whose worker died (its retry policy's InitialInterval,
// doubled at each further attempt).
const RetryInterval = 250 * time.Millisecond

// Defaults of RunInput's zero values.
const (
	DefaultMaxTurns     = 50
	DefaultTurnTimeout  = 10 * time.Minute
	DefaultCallTimeout  = 10 * time.Minute
	DefaultCallAttempts = 3
)

// RunInput starts a run on a thread that is already stored, its prompt
// appended.
type RunInput struct {
	Thread string
	// Agent names the child agent (WithChildAgents) whose run it is; ""
	// is the root. A child workflow is started with it set.
	Agent string `json:",omitempty"`
	// MaxTurns bounds the model turns; 0 means DefaultMaxTurns.
	MaxTurns int
	// TurnTimeout bounds one model turn's activity, and CallTimeout one
	// tool call's; 0 means DefaultTurnTimeout and DefaultCallTimeout.
	TurnTimeout, CallTimeout time.Duration
	// CallAttempts bounds the attempts at an idempotent call; 0 means
	// DefaultCallAttempts. Other calls are attempted once.
	CallAttempts int32
	// MaxTokens bounds the tokens the run's turns use, as their providers
	// report them (loop.WithMaxTokens); 0 means none.
	MaxTokens int64 `json:",omitempty"`
	// TimeLimit bounds the time the run works (loop.WithTimeLimit): a
	// turn or call still running at the limit is cut short, as in a loop
	// run, and time spent waiting for a decision is not counted, as a
	// resumed loop run starts its limit afresh; 0 means none.
	TimeLimit time.Duration `json:",omitempty"`
	// HeartbeatTimeout is how long Temporal waits for a heartbeat of any
	// of the run's activities before it takes its worker for dead: what a
	// worker's death costs the run; 0 means DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration `json:",omitempty"`
}

// Application error types of a run that stopped at a limit; the error's
// details hold a Limited.
const (
	ErrTypeMaxTurns  = "MaxTurns"
	ErrTypeMaxTokens = "MaxTokens"
	ErrTypeTimeLimit = "TimeLimit"
)

// ErrTypeTripped is the application error type of a run a guard stopped
// (loop.WithGuards on the Agent's loop options): the turn stored an
// artifact.Tripwire where it stopped, as a loop turn does, and the error,
// never retried, holds that tripwire as its details. AsTrip reads it back
// as the *loop.TripError a loop run returns.
const ErrTypeTripped = "LodeTripped"

// Limited is the detail of a run's limit error: what the run used of the
// limit, in the limit's unit (turns, tokens, milliseconds).
type Limited struct {
	Used, Max int64
}

// RunOutput is how a run ended.
type RunOutput struct {
	Thread string
	// Turns is how many model turns the run took.
	Turns int
	// Answer is the text of the model's last answer.
	Answer string
}

// Run is the workflow: the loop of loop.Step.Run, each model turn and
// each tool call an activity that appends to the thread in the store, so
// the ledger stays the record and Temporal's history holds only small
// results. It is deterministic: all it knows comes from activity results
// and signals, so any worker replays it and goes on from the last
// completed activity.
//
// A model turn is retried (a retry that finds the answer stored returns it
// without asking the model again). An idempotent call is retried up to
// CallAttempts times; any other is attempted once, and a call whose
// attempts fail for good gets loop.InterruptedMessage, as after a crash.
// A call that waits for approval pauses the run: PendingQuery lists what
// waits, and each DecideSignal decides one call, run (once) or denied.
func Run(ctx workflow.Context, in RunInput) (RunOutput, error) {
	out := RunOutput{Thread: in.Thread}
	maxTurns := in.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	// deadline is when the time limit ends the run's work; it starts
	// afresh after a wait for decisions.
	var deadline time.Time
	startClock := func() {
		if in.TimeLimit > 0 {
			deadline = workflow.Now(ctx).Add(in.TimeLimit)
		}
	}
	startClock()
	var tokens int64
	var waiting []artifact.Pending
	// below holds what waits in the child runs, by child thread.
	below := map[string][]artifact.Pending{}
	all := func() []artifact.Pending {
		ps := append([]artifact.Pending(nil), waiting...)
		for _, th := range slices.Sorted(maps.Keys(below)) {
			ps = append(ps, below[th]...)
		}
		return ps
	}
	if err := workflow.SetQueryHandler(ctx, PendingQuery, func() ([]artifact.Pending, error) {
		return all(), nil
	}); err != nil {
		return out, err
	}
	decisions := workflow.GetSignalChannel(ctx, DecideSignal)
	fromChildren := workflow.GetSignalChannel(ctx, ChildPendingSignal)
	// report tells the parent, when this run is a child, what waits here.
	var reported []artifact.Pending
	report := func() {
		parent := workflow.GetInfo(ctx).ParentWorkflowExecution
		now := all()
		if parent == nil || slices.EqualFunc(now, reported, func(a, b artifact.Pending) bool { return a.ToolCallID == b.ToolCallID }) {
			return
		}
		reported = now
		_ = workflow.SignalExternalWorkflow(ctx, parent.ID, parent.RunID, ChildPendingSignal, ChildPending{Thread: in.Thread, Pending: now}).Get(ctx, nil)
	}

	// Every activity heartbeats, so a worker that dies costs the run its
	// heartbeat timeout and a short retry interval, never a StartToClose.
	beat := or(in.HeartbeatTimeout, DefaultHeartbeatTimeout)
	short := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    beat,
		RetryPolicy:         &sdk.RetryPolicy{InitialInterval: RetryInterval, MaximumAttempts: 5},
	})
	turnCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: or(in.TurnTimeout, DefaultTurnTimeout),
		HeartbeatTimeout:    beat,
		RetryPolicy:         &sdk.RetryPolicy{InitialInterval: RetryInterval, MaximumAttempts: 3},
	})
	callCtx := func(c CallRef) workflow.Context {
		return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: or(c.Timeout, or(in.CallTimeout, DefaultCallTimeout)),
			HeartbeatTimeout:    beat,
			RetryPolicy:         callRetry(c, in.CallAttempts),
		})
	}
	// early keeps the decisions on calls that wait here which came while
	// a child ran, for the loop that takes decisions.
	var early []artifact.Decision
	// child runs the call c to a child agent as a child workflow, passing
	// decisions down and what waits below up, and gives the call the
	// child's answer.
	child := func(c CallRef, at int, d *artifact.Decision, stage bool) (CallResult, error) {
		var cs ChildStart
		if err := workflow.ExecuteActivity(short, ChildName, ChildInput{Thread: in.Thread, Agent: in.Agent, At: at, ID: c.ID, Decision: d, Stage: stage}).Get(ctx, &cs); err != nil {
			return CallResult{}, err
		}
		if cs.Child == "" {
			return cs.Result, nil
		}
		maxTurns := cs.MaxTurns
		if maxTurns <= 0 {
			maxTurns = DefaultMaxTurns
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: WorkflowID(cs.Child)})
		fut := workflow.ExecuteChildWorkflow(cctx, WorkflowName, RunInput{Thread: cs.Child, Agent: cs.Agent, MaxTurns: maxTurns,
			TurnTimeout: in.TurnTimeout, CallTimeout: in.CallTimeout, CallAttempts: in.CallAttempts,
			MaxTokens: cs.MaxTokens, TimeLimit: cs.TimeLimit})
		var co RunOutput
		var cerr error
		for done := false; !done; {
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(fut, func(f workflow.Future) { cerr, done = f.Get(ctx, &co), true })
			sel.AddReceive(fromChildren, func(ch workflow.ReceiveChannel, _ bool) {
				var m ChildPending
				ch.Receive(ctx, &m)
				if len(m.Pending) == 0 {
					delete(below, m.Thread)
				} else {
					below[m.Thread] = m.Pending
				}
				report()
			})
			sel.AddReceive(decisions, func(ch workflow.ReceiveChannel, _ bool) {
				var d artifact.Decision
				ch.Receive(ctx, &d)
				if indexOf(waiting, d.ToolCallID) >= 0 {
					early = append(early, d)
					return
				}
				_ = fut.SignalChildWorkflow(ctx, DecideSignal, d).Get(ctx, nil)
			})
			sel.Select(ctx)
		}
		delete(below, cs.Child)
		report()
		end := ChildEndInput{Thread: in.Thread, Agent: in.Agent, At: at, ID: c.ID, Child: cs.Child, Stage: stage}
		if cerr != nil {
			end.Failure = cerr.Error()
			if ae := (*sdk.ApplicationError)(nil); errors.As(cerr, &ae) {
				var l Limited
				switch ae.Type() {
				case ErrTypeMaxTurns:
					end.MaxTurns = maxTurns
				case ErrTypeMaxTokens:
					if ae.Details(&l) == nil {
						end.Limit, end.Used, end.Max = loop.LimitTokens, l.Used, l.Max
					}
				case ErrTypeTimeLimit:
					if ae.Details(&l) == nil {
						end.Limit, end.Used, end.Max = loop.LimitTime, l.Used, l.Max
					}
				case ErrTypeTripped:
					var w artifact.Tripwire
					if ae.Details(&w) == nil {
						end.Tripped = &w
					}
				}
			}
		}
		var r CallResult
		err := workflow.ExecuteActivity(short, ChildEndName, end).Get(ctx, &r)
		return r, err
	}
	// call runs one call, and gives it the interrupted result when its
	// attempts fail for good.
	call := func(c CallRef, at int, d *artifact.Decision) (CallResult, error) {
		var r CallResult
		if c.Child {
			return child(c, at, d, false)
		}
		in := CallInput{Thread: in.Thread, Agent: in.Agent, At: at, ID: c.ID, Decision: d, Deadline: deadline}
		err := workflow.ExecuteActivity(callCtx(c), CallName, in).Get(ctx, &r)
		if err == nil {
			return r, nil
		}
		in.Decision = nil
		if ierr := workflow.ExecuteActivity(short, InterruptName, in).Get(ctx, &r); ierr != nil {
			return r, ierr
		}
		return r, nil
	}
	// together runs the calls of one answer, each keeping its result
	// aside, then appends the results as one tool turn in the calls'
	// order, as a loop turn does; a call whose attempts fail for good is
	// interrupted, or waits when it needs approval and never ran. The
	// calls run at once, or one by one when a child agent's call is among
	// them (oneByOne).
	together := func(calls []CallRef, at int, oneByOne bool) ([]artifact.Pending, *artifact.Tripwire, error) {
		commit := CommitInput{Thread: in.Thread, Agent: in.Agent, At: at}
		var pending []artifact.Pending
		stopped := false
		got := func(i int, r CallResult, err error) {
			stopped = stopped || r.Tripped != nil
			commit.IDs = append(commit.IDs, calls[i].ID)
			if err != nil {
				commit.Failed = append(commit.Failed, calls[i].ID)
				return
			}
			if r.Pending != nil {
				pending = append(pending, *r.Pending)
			}
		}
		if oneByOne {
			for i, c := range calls {
				var r CallResult
				var err error
				if stopped {
					// After a guard stopped a result, no call of the
					// answer starts; the commit says each did not run.
					commit.IDs = append(commit.IDs, c.ID)
					continue
				}
				if c.Child {
					// A child's failure is its call's result already
					// (ChildEndName); an error here is the activity's.
					if r, err = child(c, at, nil, true); err != nil {
						return nil, nil, err
					}
				} else {
					err = workflow.ExecuteActivity(callCtx(c), CallName, CallInput{Thread: in.Thread, Agent: in.Agent, At: at, ID: c.ID, Stage: true, Deadline: deadline}).Get(ctx, &r)
				}
				got(i, r, err)
			}
		} else {
			futures := make([]workflow.Future, len(calls))
			for i, c := range calls {
				futures[i] = workflow.ExecuteActivity(callCtx(c), CallName, CallInput{Thread: in.Thread, Agent: in.Agent, At: at, ID: c.ID, Stage: true, Deadline: deadline})
			}
			for i, f := range futures {
				var r CallResult
				err := f.Get(ctx, &r)
				got(i, r, err)
			}
		}
		var r CallResult
		if err := workflow.ExecuteActivity(short, CommitName, commit).Get(ctx, &r); err != nil {
			return nil, nil, err
		}
		if r.Tripped != nil {
			return nil, r.Tripped, nil
		}
		for _, p := range r.Waiting {
			if indexOf(pending, p.ToolCallID) < 0 {
				pending = append(pending, p)
			}
		}
		return pending, nil, nil
	}

	var n int
	if err := workflow.ExecuteActivity(short, LengthName, in.Thread).Get(ctx, &n); err != nil {
		return out, err
	}
	after := n - 1
	var said string // the text of paused answers, which the next turn carries on
	for {
		still := "the model still calls tools"
		if said != "" {
			still = "the server still pauses its answer"
		}
		// In a loop run's order: turns, then tokens, then time.
		if out.Turns >= maxTurns {
			return out, sdk.NewNonRetryableApplicationError(fmt.Sprintf("temporal: thread %s: %s after %d turns", in.Thread, still, maxTurns), ErrTypeMaxTurns, nil,
				Limited{Used: int64(out.Turns), Max: int64(maxTurns)})
		}
		if in.MaxTokens > 0 && tokens >= in.MaxTokens {
			return out, sdk.NewNonRetryableApplicationError(fmt.Sprintf("temporal: thread %s: %s after %d tokens, past the limit of %d", in.Thread, still, tokens, in.MaxTokens), ErrTypeMaxTokens, nil,
				Limited{Used: tokens, Max: in.MaxTokens})
		}
		if !deadline.IsZero() && !workflow.Now(ctx).Before(deadline) {
			return out, timeLimit(in, still)
		}
		var tr TurnResult
		if err := workflow.ExecuteActivity(turnCtx, TurnName, TurnInput{Thread: in.Thread, Agent: in.Agent, After: after, Deadline: deadline}).Get(ctx, &tr); err != nil {
			if ae := (*sdk.ApplicationError)(nil); errors.As(err, &ae) && ae.Type() == ErrTypeTimeLimit {
				return out, timeLimit(in, still)
			}
			return out, err
		}
		if tr.Tripped != nil {
			return out, tripped(in, *tr.Tripped)
		}
		out.Turns++
		tokens += tr.Tokens
		after = tr.At
		if len(tr.Calls) == 0 {
			if tr.Paused {
				said += tr.Answer
				continue
			}
			out.Answer = said + tr.Answer
			return out, nil
		}
		said = ""
		refs := map[string]CallRef{}
		for _, c := range tr.Calls {
			refs[c.ID] = c
		}
		// A turn with a child agent's call runs its calls one by one; all
		// the calls of an answer land as one tool turn. Histories written
		// before the one-by-one calls were committed together append each
		// call's result apart, and replay so.
		withChild := slices.ContainsFunc(tr.Calls, func(c CallRef) bool { return c.Child })
		oneTurn := len(tr.Calls) > 1 && (!withChild || workflow.GetVersion(ctx, ChangeOneToolTurn, workflow.DefaultVersion, 1) == 1)
		if oneTurn {
			p, tw, err := together(tr.Calls, tr.At, withChild)
			if err != nil {
				return out, err
			}
			if tw != nil {
				return out, tripped(in, *tw)
			}
			waiting = append(waiting, p...)
		} else {
			for _, c := range tr.Calls {
				r, err := call(c, tr.At, nil)
				if err != nil {
					return out, err
				}
				if r.Tripped != nil {
					return out, tripped(in, *r.Tripped)
				}
				if r.Pending != nil {
					waiting = append(waiting, *r.Pending)
				}
			}
		}
		report()
		waited := len(waiting) > 0
		for len(waiting) > 0 {
			var d artifact.Decision
			if len(early) > 0 {
				d, early = early[0], early[1:]
			} else {
				decisions.Receive(ctx, &d)
			}
			i := indexOf(waiting, d.ToolCallID)
			if i < 0 {
				workflow.GetLogger(ctx).Warn("lode: a decision names no call that waits; ignored", "call", d.ToolCallID)
				continue
			}
			r, err := call(refs[d.ToolCallID], tr.At, &d)
			if err != nil {
				return out, err
			}
			if r.Tripped != nil {
				return out, tripped(in, *r.Tripped)
			}
			waiting = append(waiting[:i:i], waiting[i+1:]...)
			if r.Pending != nil {
				waiting = append(waiting, *r.Pending)
			}
			report()
		}
		if waited {
			startClock()
		}
	}
}

// tripped is the error of a run of in that a guard stopped at w: not
// retried, and never run again by a worker that takes the run over.
func tripped(in RunInput, w artifact.Tripwire) error {
	msg := strings.TrimPrefix(loop.TripErrorOf(w).Error(), "loop: ")
	return sdk.NewNonRetryableApplicationError(fmt.Sprintf("temporal: thread %s: %s", in.Thread, msg), ErrTypeTripped, nil, w)
}

// AsTrip reads the failure of a run a guard stopped (ErrTypeTripped,
// anywhere in err's chain, as a client's Get returns it) as the
// *loop.TripError a loop run returns, so that a door reports it as it
// reports a trip in process.
func AsTrip(err error) (*loop.TripError, bool) {
	var ae *sdk.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ErrTypeTripped {
		return nil, false
	}
	var w artifact.Tripwire
	if ae.Details(&w) != nil {
		return nil, false
	}
	return loop.TripErrorOf(w), true
}

// timeLimit is the error of a run of in that ran out of its time limit.
func timeLimit(in RunInput, still string) error {
	ms := in.TimeLimit.Milliseconds()
	return sdk.NewNonRetryableApplicationError(fmt.Sprintf("temporal: thread %s: %s after its time limit of %s", in.Thread, still, in.TimeLimit), ErrTypeTimeLimit, nil,
		Limited{Used: ms, Max: ms})
}

// callRetry is the retry policy of c: attempts attempts (0 means
// DefaultCallAttempts), or c's own policy, when c is idempotent; a single
// attempt otherwise.
func callRetry(c CallRef, attempts int32) *sdk.RetryPolicy {
	if !c.Idempotent {
		return &sdk.RetryPolicy{MaximumAttempts: 1}
	}
	if attempts <= 0 {
		attempts = DefaultCallAttempts
	}
	rp := sdk.RetryPolicy{InitialInterval: RetryInterval, MaximumAttempts: attempts}
	if c.Retry != nil {
		rp = *c.Retry
		if rp.MaximumAttempts == 0 {
			rp.MaximumAttempts = attempts
		}
	}
	return &rp
}

func indexOf(ps []artifact.Pending, id string) int {
	for i, p := range ps {
		if p.ToolCallID == id {
			return i
		}
	}
	return -1
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
