package loop

import (
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// Answer returns the final answer of a run on st: the text of the
// assistant turn that ends the thread without calling a tool — joined
// with the turns before it that the server paused (artifact.FinishPauseTurn)
// and Run carried on — and true. A thread that does not end with an
// answer (a call waits for approval, a result waits for the model, the run
// stopped at a limit first) gives "" and false.
func Answer(st ledger.State) (string, bool) {
	if st == nil {
		return "", false
	}
	turns := st.Turns()
	end := len(turns)
	if end == 0 || turns[end-1].Role != ledger.RoleAssistant || calls(turns[end-1]) {
		return "", false
	}
	first := end - 1
	for first > 0 && turns[first-1].Role == ledger.RoleAssistant && paused(turns[first-1]) && !calls(turns[first-1]) {
		first--
	}
	var b strings.Builder
	for _, t := range turns[first:end] {
		for _, a := range t.Artifacts {
			if x, ok := a.(artifact.Text); ok {
				b.WriteString(x.Content)
			}
		}
	}
	return b.String(), true
}

func calls(t ledger.Turn) bool {
	for _, a := range t.Artifacts {
		if _, ok := a.(artifact.ToolCall); ok {
			return true
		}
	}
	return false
}

func paused(t ledger.Turn) bool {
	for _, a := range t.Artifacts {
		if f, ok := a.(artifact.Finish); ok && f.Reason == artifact.FinishPauseTurn {
			return true
		}
	}
	return false
}
