package temporal

import (
	"context"
	"fmt"
	"slices"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// Commit is the activity that ends a turn's calls run together: it
// appends their staged results as one tool turn, in the calls' order, as
// a loop turn does; each call of in.Failed without a result gets what
// recovered gives it (loop.InterruptedMessage, or the Pending record of a
// call that needs approval and never ran, listed in CallResult.Waiting).
// It then clears the staging keys and releases the turn's lease. The
// turn is one append at the version the thread was read at, so a commit
// run again, or racing another, appends nothing twice: the store's
// compare-and-swap decides.
func (a *Agent) Commit(ctx context.Context, in CommitInput) (CallResult, error) {
	defer heartbeat(ctx)()
	a, err := a.at(in.Agent)
	if err != nil {
		return CallResult{}, err
	}
	st, err := a.load(ctx, in.Thread)
	if err != nil {
		return CallResult{}, err
	}
	defer st.Close()
	// Each call's part of the tool turn; a call the workflow did not start
	// (a guard stopped an earlier one's result) has none, and gets "not
	// run" once the trip is known.
	parts := make([][]artifact.Artifact, len(in.IDs))
	idle := map[int]artifact.ToolCall{}
	var stop *artifact.Tripwire
	for i, id := range in.IDs {
		cs, err := a.find(st, in.At, id)
		if err != nil {
			return CallResult{}, err
		}
		switch {
		case cs.staged != nil:
			parts[i] = cs.staged
			if stop == nil {
				stop = cs.tripped
			}
		case cs.result != nil || cs.pending != nil:
			// appended by an earlier attempt
		case slices.Contains(in.Failed, id):
			art, err := a.recovered(ctx, st, in.At, cs)
			if err != nil {
				return CallResult{}, err
			}
			parts[i] = []artifact.Artifact{art}
		default:
			idle[i] = cs.call
		}
	}
	if stop != nil {
		for i, c := range idle {
			parts[i] = []artifact.Artifact{loop.NotRun(c, loop.TripErrorOf(*stop))}
		}
	}
	var arts []artifact.Artifact
	for _, p := range parts {
		arts = append(arts, p...)
	}
	if len(arts) > 0 {
		var trip *loop.TripError
		arts, trip = oneTrip(arts)
		if trip != nil {
			if err := st.SetMetadata(loop.TrippedKey, "true"); err != nil {
				return CallResult{}, fmt.Errorf("temporal: thread %s: mark it stopped by a guard: %w", in.Thread, err)
			}
		}
		if err := st.Append(ledger.RoleTool, arts...); err != nil {
			return CallResult{}, fmt.Errorf("temporal: thread %s: commit the results of turn %d: %w", in.Thread, in.At, err)
		}
	}
	var out CallResult
	for _, id := range in.IDs {
		if cs, err := a.find(st, in.At, id); err == nil && cs.tripped != nil {
			out.Tripped = cs.tripped
			break
		}
	}
	for _, id := range in.Failed {
		if cs, err := a.find(st, in.At, id); err == nil && cs.result == nil && cs.pending != nil && cs.decided == nil {
			out.Waiting = append(out.Waiting, *cs.pending)
		}
	}
	for _, id := range in.IDs {
		if v, ok := st.Metadata(metaStaged + id); ok && v != "" {
			if err := st.SetMetadata(metaStaged+id, ""); err != nil {
				return CallResult{}, fmt.Errorf("temporal: thread %s: clear the staged result of %s: %w", in.Thread, id, err)
			}
		}
	}
	if l, err := st.Lease(); err == nil && l.Owner == a.turnOwner(ctx, in.At) {
		_ = st.ReleaseLease(ctx, l.Owner)
	}
	out.Len = st.Len()
	return out, nil
}

// oneTrip is the tool turn of an answer's calls run together when a guard
// stopped the result of one or more: the first tripwire, in the calls'
// order, is kept after its result and the others are dropped, and a call
// left waiting for approval is not run (it would run on a decision), as
// in a loop turn.
func oneTrip(arts []artifact.Artifact) ([]artifact.Artifact, *loop.TripError) {
	i := slices.IndexFunc(arts, func(x artifact.Artifact) bool { return x.Kind() == artifact.KindTripwire })
	if i < 0 {
		return arts, nil
	}
	te := loop.TripErrorOf(arts[i].(artifact.Tripwire))
	out := make([]artifact.Artifact, 0, len(arts))
	for j, x := range arts {
		switch y := x.(type) {
		case artifact.Tripwire:
			if j != i {
				continue
			}
		case artifact.Pending:
			x = loop.NotRun(artifact.ToolCall{ID: y.ToolCallID, Name: y.Name}, te)
		}
		out = append(out, x)
	}
	return out, te
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
