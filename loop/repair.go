package loop

import (
	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// InterruptedMessage is the content of the error result given to a tool
// call that has no result in the ledger.
const InterruptedMessage = "no result was recorded for this tool call: the run was interrupted before it finished; the call may or may not have taken effect"

// repairDangling gives every unanswered tool call an error result in the
// ledger and returns the history the model should see, in which each such
// result stands right after the turn that made the call.
//
// A State that keeps its open calls (ledger.CallTracker) is asked for
// them, so a turn costs the same on a long thread as on a short one;
// any other State is scanned in full.
func repairDangling(st ledger.State) ([]ledger.Turn, error) {
	turns := st.Turns()
	var open []ledger.OpenCall
	if ct, ok := st.(ledger.CallTracker); ok {
		open = ct.OpenCalls()
	} else {
		open = scanOpen(turns)
	}
	if len(open) == 0 {
		return turns, nil
	}
	fixes := make([]artifact.Artifact, 0, len(open))
	at := make(map[int][]artifact.Artifact)
	last := -1
	for _, c := range open {
		if c.Turn < 0 || c.Turn >= len(turns) {
			// A tracker that disagrees with the history it gave: the
			// history wins.
			return repairScanned(st, turns)
		}
		r := artifact.ToolResult{ToolCallID: c.Call.ID, Name: c.Call.Name, Content: InterruptedMessage, IsError: true}
		fixes = append(fixes, r)
		at[c.Turn] = append(at[c.Turn], r)
		last = max(last, c.Turn)
	}
	if err := st.Append(ledger.RoleTool, fixes...); err != nil {
		return nil, &LedgerError{Err: err}
	}
	// When only tool turns follow the last unanswered call, the appended
	// turn already stands where the model expects it.
	tail := true
	for _, t := range turns[last+1:] {
		if t.Role != ledger.RoleTool {
			tail = false
			break
		}
	}
	if tail && len(at) == 1 {
		return st.Turns(), nil
	}
	out := make([]ledger.Turn, 0, len(turns)+len(at))
	for i, t := range turns {
		out = append(out, t)
		if rs := at[i]; rs != nil {
			out = append(out, ledger.Turn{Role: ledger.RoleTool, Artifacts: rs})
		}
	}
	return out, nil
}

// repairScanned repairs from a full scan of turns, ignoring any tracker.
func repairScanned(st ledger.State, turns []ledger.Turn) ([]ledger.Turn, error) {
	return repairDangling(scannedState{State: st, open: scanOpen(turns)})
}

// scannedState answers OpenCalls from a scan made once.
type scannedState struct {
	ledger.State
	open []ledger.OpenCall
}

func (s scannedState) OpenCalls() []ledger.OpenCall { return s.open }

// scanOpen finds the unanswered calls by reading every turn, with the
// rules ledger.CallTracker states.
func scanOpen(turns []ledger.Turn) []ledger.OpenCall {
	var open []ledger.OpenCall
	for i, t := range turns {
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.ToolCall:
				if t.Role == ledger.RoleAssistant && indexOf(open, a.ID) < 0 {
					open = append(open, ledger.OpenCall{Turn: i, Call: a})
				}
			case artifact.ToolResult:
				if j := indexOf(open, a.ToolCallID); j >= 0 {
					open = append(open[:j], open[j+1:]...)
				}
			}
		}
	}
	return open
}

func indexOf(open []ledger.OpenCall, id string) int {
	for i, c := range open {
		if c.Call.ID == id {
			return i
		}
	}
	return -1
}
