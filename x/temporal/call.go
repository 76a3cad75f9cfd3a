package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// callState is what the thread says of one call after its answer.
type callState struct {
	call    artifact.ToolCall
	found   bool
	result  *artifact.ToolResult
	decided *artifact.Decision
	pending *artifact.Pending
	// staged is what a parallel call left for CommitName to append.
	staged []artifact.Artifact
	// tripped is the tripwire stored (or staged) with the call's result.
	tripped *artifact.Tripwire
	length  int
}

func readCall(st *ledger.StoredThread, at int, id string) (callState, error) {
	turns := st.Turns()
	cs := callState{length: len(turns)}
	if at < 0 || at >= len(turns) || turns[at].Role != ledger.RoleAssistant {
		return cs, nil
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
			case artifact.Tripwire:
				if x.ToolCallID == id {
					cs.tripped = &x
				}
			}
		}
	}
	if cs.result != nil || cs.pending != nil {
		return cs, nil
	}
	if v, ok := st.Metadata(metaStaged + id); ok && v != "" {
		var l artifact.List
		if err := json.Unmarshal([]byte(v), &l); err != nil {
			return cs, fmt.Errorf("temporal: thread %s: the staged result of %s: %w", st.ID(), id, err)
		}
		cs.staged = l
		for _, art := range l {
			switch x := art.(type) {
			case artifact.ToolResult:
				if cs.result == nil {
					cs.result = &x
				}
			case artifact.Pending:
				cs.pending = &x
			case artifact.Tripwire:
				cs.tripped = &x
			}
		}
	}
	return cs, nil
}

// openCall opens, for the agent at path, the thread and the call id of its
// turn at; the caller closes the thread.
func (a *Agent) openCall(ctx context.Context, path, thread string, at int, id string) (*Agent, *ledger.StoredThread, callState, error) {
	a, err := a.at(path)
	if err != nil {
		return nil, nil, callState{}, err
	}
	st, err := a.load(ctx, thread)
	if err != nil {
		return nil, nil, callState{}, err
	}
	cs, err := a.find(st, at, id)
	if err != nil {
		st.Close()
		return nil, nil, callState{}, err
	}
	return a, st, cs, nil
}

// find reads call id of turn at, refusing a call the turn does not hold.
func (a *Agent) find(st *ledger.StoredThread, at int, id string) (callState, error) {
	cs, err := readCall(st, at, id)
	if err == nil && !cs.found {
		err = fmt.Errorf("temporal: thread %s: turn %d has no tool call %s", st.ID(), at, id)
	}
	return cs, err
}

// Call is the activity that runs one tool call through the handler and
// appends what it emits (or, with Stage, keeps it for CommitName). A call
// that already has a result is not run again: a retry after the worker
// died past the append returns that result. With a Decision, the decision
// is recorded first (once), and a denied call gets the denial the model
// reads. The call runs with the tools the turn offered (MetaOffered), so
// x/tool's Handler refuses any other exactly as in a loop turn.
func (a *Agent) Call(ctx context.Context, in CallInput) (CallResult, error) {
	defer heartbeat(ctx)()
	a, st, cs, err := a.openCall(ctx, in.Agent, in.Thread, in.At, in.ID)
	if err != nil {
		return CallResult{}, err
	}
	defer st.Close()
	ctx = loop.WithRunIdentity(ctx, st) // the call's execute_tool span names the run
	if cs.result != nil {
		// A guard that stopped its result stopped the run: the call is
		// not run again, on this worker or any other.
		return CallResult{IsError: cs.result.IsError, Len: cs.length, Tripped: cs.tripped}, nil
	}
	if cs.pending != nil && in.Decision == nil {
		return CallResult{Pending: cs.pending, Len: cs.length}, nil
	}
	if in.Stage && firstAttempt(ctx) {
		// After a guard stopped a result, no call of the answer starts,
		// as in a loop turn. A call retried after its worker died was
		// running when the trip came, and ends, as one running then does
		// in a loop turn: its result is checked like any.
		if te, err := a.siblingTrip(st, in); err != nil || te != nil {
			if err != nil {
				return CallResult{}, err
			}
			r := loop.NotRun(cs.call, te)
			if err := a.keep(ctx, st, in, []artifact.Artifact{r}); err != nil {
				return CallResult{}, err
			}
			return CallResult{IsError: true, Len: st.Len()}, nil
		}
	}
	tools, restricted, err := offeredTools(st)
	if err != nil {
		return CallResult{}, err
	}
	owner, err := a.lease(ctx, st, in.At)
	if err != nil {
		return CallResult{}, err
	}
	if !in.Stage {
		// Parallel calls share the turn's lease; CommitName releases it.
		defer func() { _ = st.ReleaseLease(context.WithoutCancel(ctx), owner) }()
	}

	run := cs.call
	// The handler runs in the turn that made the call, as in a loop turn,
	// and within the run's time limit.
	cctx, cancel := withDeadline(turnContext(ctx, st, in.At, in.ID), in.Deadline)
	defer cancel()
	if restricted {
		cctx = xtool.WithOffered(cctx, tools)
	}
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
		cctx = loop.WithApproval(cctx, d)
	} else if arts, stop, err := a.gateAbove(ctx, st, in.At, cs.call, true); err != nil {
		return CallResult{}, err
	} else if stop {
		return a.ended(ctx, st, in, arts)
	}

	var arts []artifact.Artifact
	if a.handler == nil {
		arts = []artifact.Artifact{artifact.ToolResult{ToolCallID: run.ID, Name: run.Name, IsError: true, Content: "temporal: no handler runs tool calls on this worker"}}
	} else {
		var col collect
		// The turn's other calls write to the thread at the same time: a
		// label the call brings in is written again after a conflict, as
		// its result is, rather than withholding the result.
		cctx = xtool.WithLabelWriter(cctx, func(s ledger.State, l ledger.Label, from string) error {
			if s != ledger.State(st) {
				return ledger.AddLabel(s, l, from)
			}
			return again(ctx, st, func() error { return ledger.AddLabel(st, l, from) })
		})
		herr := a.handler.Handle(cctx, run, &col)
		if herr != nil {
			// Retried by Temporal when the tool is idempotent; otherwise
			// the workflow records the call as interrupted.
			return CallResult{}, fmt.Errorf("temporal: thread %s: call %s: %w", in.Thread, in.ID, herr)
		}
		arts = col.arts
		// The result guards read what the handler emitted before it is
		// kept, as in a loop turn.
		var te *loop.TripError
		if arts, te = a.turn.CheckResults(cctx, st, run, arts); te != nil && !in.Stage {
			if err := st.SetMetadata(loop.TrippedKey, "true"); err != nil {
				return CallResult{}, fmt.Errorf("temporal: thread %s: mark it stopped by a guard: %w", in.Thread, err)
			}
		}
	}
	var out CallResult
	for _, art := range arts {
		switch x := art.(type) {
		case artifact.ToolResult:
			out.IsError = out.IsError || x.IsError
		case artifact.Pending:
			p := x
			out.Pending = &p
		case artifact.Tripwire:
			w := x
			out.Tripped = &w
		}
	}
	if err := a.keep(ctx, st, in, arts); err != nil {
		return CallResult{}, err
	}
	out.Len = st.Len()
	return out, nil
}

// firstAttempt reports whether ctx is the first attempt at its activity
// (or no activity's: a test calling the method).
func firstAttempt(ctx context.Context) bool {
	return !activity.IsActivity(ctx) || activity.GetInfo(ctx).Attempt <= 1
}

// siblingTrip is the trip staged with the result of another call of in's
// answer, if a guard stopped one.
func (a *Agent) siblingTrip(st *ledger.StoredThread, in CallInput) (*loop.TripError, error) {
	turns := st.Turns()
	for _, art := range turns[in.At].Artifacts {
		c, ok := art.(artifact.ToolCall)
		if !ok || c.ID == in.ID {
			continue
		}
		cs, err := readCall(st, in.At, c.ID)
		if err != nil {
			return nil, err
		}
		if cs.tripped != nil {
			return loop.TripErrorOf(*cs.tripped), nil
		}
	}
	return nil, nil
}

// keep appends what a call emitted, or with in.Stage keeps it under the
// call's staging key; the turn's other calls write to the thread at the
// same time, so a change made since st was read is read and tried again.
func (a *Agent) keep(ctx context.Context, st *ledger.StoredThread, in CallInput, arts []artifact.Artifact) error {
	if len(arts) == 0 {
		return nil
	}
	var err error
	if in.Stage {
		b, merr := json.Marshal(artifact.List(arts))
		if merr != nil {
			return fmt.Errorf("temporal: thread %s: call %s: %w", in.Thread, in.ID, merr)
		}
		err = again(ctx, st, func() error { return st.SetMetadata(metaStaged+in.ID, string(b)) })
	} else {
		err = st.Append(ledger.RoleTool, arts...)
	}
	if err != nil {
		return fmt.Errorf("temporal: thread %s: call %s: %w", in.Thread, in.ID, err)
	}
	return nil
}

// conflictRetries bounds how often one write is tried again after the
// turn's other calls changed the thread.
const conflictRetries = 16

// again runs write, and while it fails because the stored thread changed
// since st read it, reloads st and runs it again. A lease another owner
// holds is not such a change.
func again(ctx context.Context, st *ledger.StoredThread, write func() error) error {
	for i := 0; ; i++ {
		err := write()
		var le *ledger.LeaseError
		if err == nil || !errors.Is(err, ledger.ErrConflict) || errors.As(err, &le) || i == conflictRetries {
			return err
		}
		if rerr := st.Reload(ctx); rerr != nil {
			return rerr
		}
	}
}

// Interrupt is the activity that gives a call that failed for good (its
// worker died inside it, it timed out, its attempts ran out) the error
// result loop.InterruptedMessage, unless it has a result already, or
// unless it never ran because it needs a person's approval (see
// recovered): then it gets the Pending record its worker did not live to
// write, and CallResult.Pending says it waits.
func (a *Agent) Interrupt(ctx context.Context, in CallInput) (CallResult, error) {
	defer heartbeat(ctx)()
	a, st, cs, err := a.openCall(ctx, in.Agent, in.Thread, in.At, in.ID)
	if err != nil {
		return CallResult{}, err
	}
	defer st.Close()
	defer a.releaseDead(context.WithoutCancel(ctx), st)
	if cs.result != nil {
		return CallResult{IsError: cs.result.IsError, Len: cs.length, Tripped: cs.tripped}, nil
	}
	if cs.pending != nil && cs.decided == nil {
		// It waits (recorded by the call, or by an earlier attempt of
		// this one); a decision that was sent and never recorded is
		// asked again: the call did not run under it.
		return CallResult{Pending: cs.pending, Len: cs.length}, nil
	}
	art, err := a.recovered(ctx, st, in.At, cs)
	if err != nil {
		return CallResult{}, err
	}
	if err := st.Append(ledger.RoleTool, art); err != nil {
		return CallResult{}, fmt.Errorf("temporal: thread %s: interrupt %s: %w", in.Thread, in.ID, err)
	}
	if p, ok := art.(artifact.Pending); ok {
		return CallResult{Pending: &p, Len: st.Len()}, nil
	}
	return CallResult{IsError: true, Len: st.Len()}, nil
}

func interrupted(c artifact.ToolCall) artifact.ToolResult {
	return artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, IsError: true, Content: loop.InterruptedMessage}
}

// recovered is what a call that ended for good without a result or a
// record gets. A call on which no decision was recorded, and that the
// approval rules covering it send to a person, never ran: a call that
// needs approval runs only under a recorded decision. Its worker died
// after the answer landed and before the Pending record was written, so
// it gets that record now and waits, as it would have; the person is
// asked, never skipped. Any other call may have run, partly or whole,
// and gets loop.InterruptedMessage.
func (a *Agent) recovered(ctx context.Context, st *ledger.StoredThread, at int, cs callState) (artifact.Artifact, error) {
	if cs.decided == nil {
		p, err := a.asks(ctx, st, at, cs.call)
		if err != nil {
			return nil, err
		}
		if p != nil {
			return *p, nil
		}
	}
	return interrupted(cs.call), nil
}

// asks returns the Pending record of call, made at turn at of st, when
// the approval rules that cover it (a's x/tool Handler's, and those of
// every caller above a child agent) leave it to a person; nil otherwise.
func (a *Agent) asks(ctx context.Context, st *ledger.StoredThread, at int, call artifact.ToolCall) (*artifact.Pending, error) {
	if h, ok := a.handler.(*xtool.Handler); ok {
		reason, err := h.GateBelow(turnContext(ctx, st, at, call.ID), toolpkg.Tool{Name: call.Name}, call)
		if errors.Is(err, xtool.ErrAwaitingApproval) {
			return &artifact.Pending{ToolCallID: call.ID, Name: call.Name, Arguments: call.Arguments, Reason: reason}, nil
		}
	}
	arts, stop, err := a.gateAbove(ctx, st, at, call, false)
	if err != nil || !stop {
		return nil, err
	}
	for _, art := range arts {
		if p, ok := art.(artifact.Pending); ok {
			return &p, nil
		}
	}
	return nil, nil
}
