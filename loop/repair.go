package loop

import (
	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// InterruptedMessage is the content of the error result given to a tool
// call that has no result in the ledger.
const InterruptedMessage = "no result was recorded for this tool call: the run was interrupted before it finished; the call may or may not have taken effect"

// repairDangling gives every unanswered tool call an error result in the
// ledger and returns the history the model should see, in which each
// result stands right after the turn that made its call: the ones it adds
// now, and any stored after a later message (ledger.LateResult), since no
// model API accepts a message between a call and its result.
//
// A State that keeps its open calls and late results (ledger.CallTracker,
// ledger.LateTracker) is asked for them, so a turn costs the same on a
// long thread as on a short one; any other State is scanned in full.
func repairDangling(st ledger.State) ([]ledger.Turn, error) {
	turns := st.Turns()
	ct, tracksOpen := st.(ledger.CallTracker)
	lt, tracksLate := st.(ledger.LateTracker)
	if !tracksOpen || !tracksLate {
		return repairScanned(st, turns)
	}
	open, late := ct.OpenCalls(), lt.LateResults()
	if !inRange(open, late, len(turns)) {
		// A tracker that disagrees with the history it gave: the history
		// wins.
		return repairScanned(st, turns)
	}
	return repair(st, turns, open, late)
}

// repairScanned repairs from a full scan of turns, ignoring any tracker.
func repairScanned(st ledger.State, turns []ledger.Turn) ([]ledger.Turn, error) {
	open, late := ledger.ScanCalls(turns)
	return repair(st, turns, open, late)
}

func inRange(open []ledger.OpenCall, late []ledger.LateResult, n int) bool {
	for _, c := range open {
		if c.Turn < 0 || c.Turn >= n {
			return false
		}
	}
	for _, l := range late {
		if l.Call < 0 || l.Result <= l.Call || l.Result >= n {
			return false
		}
	}
	return true
}

func repair(st ledger.State, turns []ledger.Turn, open []ledger.OpenCall, late []ledger.LateResult) ([]ledger.Turn, error) {
	if len(open) == 0 && len(late) == 0 {
		return turns, nil
	}
	var at map[int][]artifact.Artifact
	if len(open) > 0 {
		fixes := make([]artifact.Artifact, 0, len(open))
		at = make(map[int][]artifact.Artifact)
		last := -1
		for _, c := range open {
			r := artifact.ToolResult{ToolCallID: c.Call.ID, Name: c.Call.Name, Content: InterruptedMessage, IsError: true}
			fixes = append(fixes, r)
			at[c.Turn] = append(at[c.Turn], r)
			last = max(last, c.Turn)
		}
		if err := st.Append(ledger.RoleTool, fixes...); err != nil {
			return nil, &LedgerError{Err: err}
		}
		// When only tool turns follow the last unanswered call, the
		// appended turn already stands where the model expects it.
		tail := len(at) == 1
		for _, t := range turns[last+1:] {
			if t.Role != ledger.RoleTool {
				tail = false
				break
			}
		}
		if tail {
			at = nil
			turns = st.Turns()
		}
	}
	if len(late) == 0 && at == nil {
		return turns, nil
	}
	// Results stored late move to the turn after their call's; the turn
	// they were stored in keeps the rest of what it holds.
	moved := make(map[int]map[string]bool, len(late))
	for _, l := range late {
		r, ok := resultIn(turns[l.Result], l.ToolCallID)
		if !ok {
			continue
		}
		if at == nil {
			at = make(map[int][]artifact.Artifact)
		}
		at[l.Call] = append(at[l.Call], r)
		if moved[l.Result] == nil {
			moved[l.Result] = make(map[string]bool)
		}
		moved[l.Result][l.ToolCallID] = true
	}
	out := make([]ledger.Turn, 0, len(turns)+len(at))
	for i, t := range turns {
		if ids := moved[i]; ids != nil {
			t = without(t, ids)
			if len(t.Artifacts) == 0 {
				continue
			}
		}
		out = append(out, t)
		if rs := at[i]; rs != nil {
			out = append(out, ledger.Turn{Role: ledger.RoleTool, Artifacts: rs})
		}
	}
	return out, nil
}

// resultIn finds the first result for id in t.
func resultIn(t ledger.Turn, id string) (artifact.ToolResult, bool) {
	for _, a := range t.Artifacts {
		if r, ok := a.(artifact.ToolResult); ok && r.ToolCallID == id {
			return r, true
		}
	}
	return artifact.ToolResult{}, false
}

// without is t less the first result for each of ids.
func without(t ledger.Turn, ids map[string]bool) ledger.Turn {
	done := make(map[string]bool, len(ids))
	arts := make([]artifact.Artifact, 0, len(t.Artifacts))
	for _, a := range t.Artifacts {
		if r, ok := a.(artifact.ToolResult); ok && ids[r.ToolCallID] && !done[r.ToolCallID] {
			done[r.ToolCallID] = true
			continue
		}
		arts = append(arts, a)
	}
	t.Artifacts = arts
	return t
}
