package ledger

import "github.com/lodeworks/lode/artifact"

// OpenCall is a tool call that no turn has answered yet: Call, made in the
// Turn-th turn (from 0).
type OpenCall struct {
	Turn int
	Call artifact.ToolCall
}

// CallTracker is implemented by States that keep, as turns are appended,
// the tool calls still waiting for a result, so that a loop need not read
// the whole history before every turn to find them. Thread and
// StoredThread implement it; a State that does not is scanned in full.
//
// A call counts when an assistant turn makes it; a ToolResult in any turn
// answers the open call with its ID. While a call is open, a second call
// with the same ID is ignored; once answered, the ID may be used again.
type CallTracker interface {
	// OpenCalls returns the unanswered calls in the order they were made;
	// nil when there are none. The slice is the caller's.
	OpenCalls() []OpenCall
}

// LateResult is a tool result stored after a user, system or assistant
// turn that came later than the call it answers: the result of a call that
// waited for approval while a message was added, or of an interrupted
// call repaired after one. No model API accepts a message between a call
// and its result, so a loop sends such a result right after the call's
// turn; the ledger keeps the order things happened in.
type LateResult struct {
	// Call is the index of the assistant turn that made the call, Result
	// the index of the turn that holds its result.
	Call, Result int
	// ToolCallID names the call, and the result within its turn.
	ToolCallID string
}

// LateTracker is implemented by States that keep, as turns are appended,
// the results that stand after a later non-tool turn than their call
// (Thread and StoredThread do), so that finding them costs nothing on a
// thread without any. A State that does not is scanned in full.
type LateTracker interface {
	// LateResults returns the late results in the order they were
	// appended; nil when there are none. The slice is the caller's.
	LateResults() []LateResult
}

// ScanCalls finds, by reading every turn, what CallTracker and LateTracker
// report, with the rules they state: for States that track neither.
func ScanCalls(turns []Turn) (open []OpenCall, late []LateResult) {
	o := trackAll(turns)
	return o.clone(), o.lateClone()
}

// openCalls is the bookkeeping behind CallTracker and LateTracker. Open
// calls are few (the calls of the last answer, while they run), so a slice
// is enough; late results are rarer still.
type openCalls struct {
	calls []OpenCall
	late  []LateResult
	// other is 1 + the index of the newest turn that is not a tool turn;
	// 0 before there is one.
	other int
}

func (o *openCalls) add(index int, t Turn) {
	for _, a := range t.Artifacts {
		switch a := a.(type) {
		case artifact.ToolCall:
			if t.Role == RoleAssistant && o.find(a.ID) < 0 {
				o.calls = append(o.calls, OpenCall{Turn: index, Call: a})
			}
		case artifact.ToolResult:
			if i := o.find(a.ToolCallID); i >= 0 {
				if c := o.calls[i]; o.other-1 > c.Turn {
					o.late = append(o.late, LateResult{Call: c.Turn, Result: index, ToolCallID: a.ToolCallID})
				}
				o.calls = append(o.calls[:i], o.calls[i+1:]...)
			}
		}
	}
	if t.Role != RoleTool {
		o.other = index + 1
	}
}

func (o *openCalls) find(id string) int {
	for i, c := range o.calls {
		if c.Call.ID == id {
			return i
		}
	}
	return -1
}

func (o *openCalls) clone() []OpenCall {
	if len(o.calls) == 0 {
		return nil
	}
	return append([]OpenCall(nil), o.calls...)
}

func (o *openCalls) lateClone() []LateResult {
	if len(o.late) == 0 {
		return nil
	}
	return append([]LateResult(nil), o.late...)
}

func trackAll(turns []Turn) openCalls {
	var o openCalls
	for i, t := range turns {
		o.add(i, t)
	}
	return o
}
