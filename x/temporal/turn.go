package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	sdk "go.temporal.io/sdk/temporal"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	toolpkg "github.com/lodeworks/lode/tool"
)

// Length is the activity that reads how many turns a thread has.
func (a *Agent) Length(ctx context.Context, thread string) (int, error) {
	defer heartbeat(ctx)()
	st, err := a.load(ctx, thread)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	return st.Len(), nil
}

// Turn is the activity that takes one model turn on the thread: the model
// streams (to the Step's observers), and the answer is appended. A retry
// finds the answer stored and returns it without asking again. Before the
// model is asked, the names of the tools the turn offers are kept under
// MetaOffered, for the calls the answer makes.
func (a *Agent) Turn(ctx context.Context, in TurnInput) (TurnResult, error) {
	defer heartbeat(ctx)()
	a, err := a.at(in.Agent)
	if err != nil {
		return TurnResult{}, err
	}
	st, err := a.load(ctx, in.Thread)
	if err != nil {
		return TurnResult{}, err
	}
	defer st.Close()
	ctx = loop.WithRunIdentity(ctx, st) // its spans, the answer handlers' too, name the run
	// The lease first, as a loop turn takes it: an owner that names this
	// run and turn, so a retry after a worker died takes it over at once.
	lctx, h, err := a.hold(ctx, st, a.modelOwner(ctx, in.After))
	if err != nil {
		return TurnResult{}, err
	}
	defer h.end(ctx)
	if r, ok := a.landed(st.Turns(), in.After); ok {
		return a.guardCalls(ctx, st, r)
	}
	tctx, cancel := withDeadline(lctx, in.Deadline)
	defer cancel()
	if tctx.Err() != nil {
		return TurnResult{}, timeUp(in.Thread, tctx.Err())
	}
	// Last, so that it sees what every other option offered.
	opts := append(a.invoke[:len(a.invoke):len(a.invoke)], provider.OptionFunc(noteOffered))
	_, err = a.turn.Turn(tctx, st, a.prov, opts...)
	if te, ok := errors.AsType[*loop.TripError](err); ok {
		// Stored by the Step (or stored before: the thread ends with it),
		// at the user's message or the answer.
		tw := te.Tripwire()
		return TurnResult{At: st.Len() - 1, Tripped: &tw}, nil
	}
	if err != nil {
		if cause := context.Cause(lctx); cause != nil && errors.Is(cause, ledger.ErrLeased) {
			return TurnResult{}, fmt.Errorf("temporal: turn on thread %s: %w", in.Thread, cause)
		}
		if errors.Is(context.Cause(tctx), errTimeUp) {
			return TurnResult{}, timeUp(in.Thread, err)
		}
		return TurnResult{}, fmt.Errorf("temporal: turn on thread %s: %w", in.Thread, err)
	}
	r, ok := a.landed(st.Turns(), in.After)
	if !ok {
		return TurnResult{}, fmt.Errorf("temporal: turn on thread %s: no answer was stored", in.Thread)
	}
	if len(r.Calls) == 0 && !r.Paused && r.Tripped == nil {
		a.answered(tctx, st, r.At)
	}
	return a.guardCalls(ctx, st, r)
}

// answered gives the answer stored at turn at to the answer handlers.
func (a *Agent) answered(ctx context.Context, st ledger.State, at int) {
	if len(a.answer) == 0 {
		return
	}
	arts := st.Turns()[at].Artifacts
	info := loop.TurnInfo{State: st, Answer: arts}
	for i, art := range arts {
		hctx := loop.WithTurn(ctx, info, i)
		for _, h := range a.answer {
			if err := h.Handle(hctx, art, nil); err != nil && activity.IsActivity(ctx) {
				activity.GetLogger(ctx).Warn("an answer handler failed", "thread", st.ID(), "error", err)
			}
		}
	}
}

// guardCalls asks the call guards about the calls of the answer r before
// any runs, as a loop turn does (loop.Step.CheckCalls): on a trip, the
// tool turn a loop turn stores in their place is appended and r says the
// run stopped. A retry finds that turn after the answer and says the
// same, asking no guard again.
func (a *Agent) guardCalls(ctx context.Context, st *ledger.StoredThread, r TurnResult) (TurnResult, error) {
	if r.Tripped != nil || len(r.Calls) == 0 {
		return r, nil
	}
	turns := st.Turns()
	if r.At+1 < len(turns) {
		if w, ok := tripwireIn(turns[r.At+1].Artifacts); ok {
			r.Tripped = &w
		}
		return r, nil
	}
	stopped, te := a.turn.CheckCalls(ctx, st, turns[r.At].Artifacts)
	if te == nil {
		return r, nil
	}
	if err := storeTrip(st, stopped); err != nil {
		return TurnResult{}, err
	}
	tw := te.Tripwire()
	r.Tripped = &tw
	return r, nil
}

// storeTrip appends a tool turn that holds a tripwire, marking the thread
// first (loop.TrippedKey) as a loop turn does.
func storeTrip(st *ledger.StoredThread, arts []artifact.Artifact) error {
	if err := st.SetMetadata(loop.TrippedKey, "true"); err != nil {
		return fmt.Errorf("temporal: thread %s: mark it stopped by a guard: %w", st.ID(), err)
	}
	if err := st.Append(ledger.RoleTool, arts...); err != nil {
		return fmt.Errorf("temporal: thread %s: store the tripwire: %w", st.ID(), err)
	}
	return nil
}

// tripwireIn finds the tripwire among arts.
func tripwireIn(arts []artifact.Artifact) (artifact.Tripwire, bool) {
	for _, x := range arts {
		if w, ok := x.(artifact.Tripwire); ok {
			return w, true
		}
	}
	return artifact.Tripwire{}, false
}

// errTimeUp is the cause of an activity's context cancelled at the run's
// time limit.
var errTimeUp = errors.New("temporal: the run's time limit passed")

// withDeadline bounds ctx by the run's deadline, when it has one.
func withDeadline(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadlineCause(ctx, deadline, errTimeUp)
}

// timeUp is the error of a turn the run's time limit cut short: not
// retried, and read by the workflow as the run's limit.
func timeUp(thread string, cause error) error {
	return sdk.NewNonRetryableApplicationError(fmt.Sprintf("temporal: turn on thread %s: the run's time limit passed", thread), ErrTypeTimeLimit, cause)
}

// noteOffered keeps the names of the tools req offers under MetaOffered;
// setting the value the key holds writes nothing, so a run whose turns
// offer the same tools writes it once.
func noteOffered(_ context.Context, st ledger.State, req *provider.Request) error {
	names := make([]string, 0, len(req.Tools))
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	b, _ := json.Marshal(names) // strings always encode
	if err := st.SetMetadata(MetaOffered, string(b)); err != nil {
		return fmt.Errorf("temporal: keep the offered tools: %w", err)
	}
	return nil
}

// offeredTools reads MetaOffered: the tools the current turn offered, by
// name, and false when the thread has no record of them (a turn taken
// before this package kept them).
func offeredTools(st *ledger.StoredThread) ([]toolpkg.Tool, bool, error) {
	v, ok := st.Metadata(MetaOffered)
	if !ok || v == "" {
		return nil, false, nil
	}
	var names []string
	if err := json.Unmarshal([]byte(v), &names); err != nil {
		return nil, false, fmt.Errorf("temporal: thread %s: metadata %q holds %q, not a list of tool names: %w", st.ID(), MetaOffered, v, err)
	}
	tools := make([]toolpkg.Tool, len(names))
	for i, n := range names {
		tools[i].Name = n
	}
	return tools, true, nil
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
				r.Calls = append(r.Calls, a.ref(x))
			case artifact.Text:
				r.Answer += x.Content
			case artifact.Finish:
				r.Paused = x.Reason == artifact.FinishPauseTurn
			case artifact.Usage:
				r.Tokens += x.Total()
			case artifact.Tripwire:
				w := x
				r.Tripped = &w
			}
		}
		if r.Tripped != nil {
			r.Calls, r.Answer = nil, ""
		}
		return r, true
	}
	return TurnResult{}, false
}

func (a *Agent) idempotent(c artifact.ToolCall) bool {
	cc, ok := a.handler.(loop.CallChecker)
	return ok && cc.Idempotent(c)
}

// ref is what the workflow needs to schedule c: whether it may be retried,
// and how, and how long an attempt may take.
func (a *Agent) ref(c artifact.ToolCall) CallRef {
	if _, ok := a.children[c.Name]; ok {
		return CallRef{ID: c.ID, Name: c.Name, Child: true}
	}
	r := CallRef{ID: c.ID, Name: c.Name, Idempotent: a.idempotent(c)}
	p := a.policy[c.Name]
	switch ct, ok := a.handler.(CallTimer); {
	case p.Timeout > 0:
		r.Timeout = p.Timeout
	case ok:
		if d := ct.CallTimeout(c); d > 0 {
			r.Timeout = d + CallGrace
		}
	}
	if r.Idempotent && p.Retry != nil {
		rp := *p.Retry
		r.Retry = &rp
	}
	return r
}
