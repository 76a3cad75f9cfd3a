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

// openCalls is the bookkeeping behind CallTracker. Open calls are few (the
// calls of the last answer, while they run), so a slice is enough.
type openCalls []OpenCall

func (o *openCalls) add(index int, t Turn) {
	for _, a := range t.Artifacts {
		switch a := a.(type) {
		case artifact.ToolCall:
			if t.Role == RoleAssistant && o.find(a.ID) < 0 {
				*o = append(*o, OpenCall{Turn: index, Call: a})
			}
		case artifact.ToolResult:
			if i := o.find(a.ToolCallID); i >= 0 {
				*o = append((*o)[:i], (*o)[i+1:]...)
			}
		}
	}
}

func (o openCalls) find(id string) int {
	for i, c := range o {
		if c.Call.ID == id {
			return i
		}
	}
	return -1
}

func (o openCalls) clone() []OpenCall {
	if len(o) == 0 {
		return nil
	}
	return append([]OpenCall(nil), o...)
}

func trackAll(turns []Turn) openCalls {
	var o openCalls
	for i, t := range turns {
		o.add(i, t)
	}
	return o
}
