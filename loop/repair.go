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
func repairDangling(st ledger.State) ([]ledger.Turn, error) {
	turns := st.Turns()
	var open map[string]int // call ID -> index of the turn that made it
	var order []artifact.ToolCall
	for i, t := range turns {
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.ToolCall:
				if t.Role != ledger.RoleAssistant {
					continue
				}
				if open == nil {
					open = make(map[string]int)
				}
				if _, dup := open[a.ID]; !dup {
					open[a.ID] = i
					order = append(order, a)
				}
			case artifact.ToolResult:
				if _, ok := open[a.ToolCallID]; ok {
					delete(open, a.ToolCallID)
				}
			}
		}
	}
	if len(open) == 0 {
		return turns, nil
	}
	var fixes []artifact.Artifact
	at := make(map[int][]artifact.Artifact)
	last := -1
	for _, c := range order {
		i, ok := open[c.ID]
		if !ok {
			continue
		}
		r := artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: InterruptedMessage, IsError: true}
		fixes = append(fixes, r)
		at[i] = append(at[i], r)
		last = max(last, i)
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
