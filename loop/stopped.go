package loop

import (
	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// StoppedReason is the artifact.Finish reason of an answer whose turn was
// stopped while the model wrote it (the person pressed Stop or Ctrl-C).
const StoppedReason = "cancelled"

// KeepStopped stores on st the answer of a turn stopped while the model
// wrote it: text, the part that was shown, if any, and a Finish with
// StoppedReason, so that the thread reads as the person saw it and the
// next message follows an answer rather than a second user message in a
// row. It stores nothing when the model's turn is not due (the last turn
// is not the user's or a tool's): the answer landed, or calls wait for
// results. Adapters send no Finish to a model, and no empty assistant
// turn, so a model reads the partial text and nothing more.
func KeepStopped(st ledger.State, text string) error {
	turns := st.Turns()
	if len(turns) == 0 {
		return nil
	}
	if r := turns[len(turns)-1].Role; r != ledger.RoleUser && r != ledger.RoleTool {
		return nil
	}
	var arts []artifact.Artifact
	if text != "" {
		arts = append(arts, artifact.Text{Content: text})
	}
	arts = append(arts, artifact.Finish{Reason: StoppedReason})
	return st.Append(ledger.RoleAssistant, arts...)
}
