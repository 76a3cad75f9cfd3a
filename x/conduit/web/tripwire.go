package web

import (
	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// tripwireID is the id of a message's data-tripwire part. A message holds
// at most one: a trip ends the turn, and only a new user message, which
// starts a new message, goes on from it.
const tripwireID = "tripwire"

// uiTripwire is a data-tripwire part's data: an artifact.Tripwire as the
// page and useChat clients read it.
type uiTripwire struct {
	Guard  string `json:"guard"`
	At     string `json:"at"` // "input", "call", "result" or "output"
	Reason string `json:"reason"`
	// ToolCallID is the call a call or result guard stopped.
	ToolCallID string `json:"toolCallId,omitempty"`
}

func tripwireData(w artifact.Tripwire) uiTripwire {
	return uiTripwire{Guard: w.Guard, At: w.At, Reason: w.Reason, ToolCallID: w.ToolCallID}
}

// tripwirePart is the data-tripwire stream part of w. It is not
// transient: the SDK's client keeps it in the message, as a replay has it.
func tripwirePart(w artifact.Tripwire) map[string]any {
	return map[string]any{"type": "data-tripwire", "id": tripwireID, "data": tripwireData(w)}
}

// tripwireUIPart is w as a part of a replayed message.
func tripwireUIPart(w artifact.Tripwire) uiPart {
	return uiPart{Type: "data-tripwire", ID: tripwireID, Data: tripwireData(w)}
}

// tripwire streams w, once per stream.
func (s *stream) tripwire(w artifact.Tripwire) {
	if s.tripped {
		return
	}
	s.tripped = true
	s.send(tripwirePart(w))
}

// unrun sends the results the trip stored for calls the stream left open:
// the calls of the answer that did not start after a result guard
// tripped, and calls waiting for approval that will not run now. The
// loop stores them in the tool turn of the trip without showing them to
// observers; turns is the thread once the turn ended.
func (s *stream) unrun(turns []ledger.Turn) {
	if len(s.open) == 0 || len(turns) == 0 || turns[len(turns)-1].Role != ledger.RoleTool {
		return
	}
	var rs []artifact.Artifact
	for _, a := range turns[len(turns)-1].Artifacts {
		if r, ok := a.(artifact.ToolResult); ok && s.open[r.ToolCallID] {
			rs = append(rs, r)
		}
	}
	if len(rs) > 0 {
		s.results(rs)
	}
}
