package web

import (
	"context"
	"unicode/utf8"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// StoppedReason is the artifact.Finish reason of an answer its turn was
// cancelled in: the caller pressed Stop (or, with CancelOnDisconnect, its
// browser left) or the handler closed. The handler stores such an answer
// as an assistant turn of the text streamed so far and this Finish, so
// that a reload shows what was shown, then "Stopped."; GET
// /api/threads/{id} ends its message with a data-stopped part. Adapters
// send no Finish to a model, and no empty assistant turn, so the model
// sees the partial text and nothing more.
const StoppedReason = "cancelled"

// MaxStoppedText bounds the text kept of a stopped answer. The text is
// collected as it streams, so a turn holds up to this much more than its
// queues (see "Bounded memory" in the package doc); a longer answer keeps
// its first MaxStoppedText bytes and StoppedCut after them.
const MaxStoppedText = 256 << 10

// StoppedCut ends the text kept of a stopped answer longer than
// MaxStoppedText.
const StoppedCut = "\n\n[…the rest of this stopped answer was not kept]"

// partialText collects the text an answer has streamed so far. It is an
// observer: the loop keeps only whole artifacts, and a cancelled answer
// has none.
type partialText struct {
	b   []byte
	cut bool
}

func (p *partialText) Emit(_ context.Context, ev loop.Event) {
	switch ev := ev.(type) {
	case loop.DeltaEvent:
		d, ok := ev.Delta.(artifact.TextDelta)
		if !ok || p.cut {
			return
		}
		if room := MaxStoppedText - len(p.b); len(d.Content) > room {
			// Cut on a rune boundary, so that the text stays UTF-8.
			n := room
			for n > 0 && !utf8.RuneStart(d.Content[n]) {
				n--
			}
			p.b = append(p.b, d.Content[:n]...)
			p.cut = true
			return
		}
		p.b = append(p.b, d.Content...)
	case loop.TurnCompleteEvent:
		// A whole answer is stored by the loop; the next one starts empty.
		if ev.Role == ledger.RoleAssistant {
			p.b, p.cut = p.b[:0], false
		}
	}
}

// text is what is kept of the answer.
func (p *partialText) text() string {
	if p.cut {
		return string(p.b) + StoppedCut
	}
	return string(p.b)
}

// keepStopped stores the answer of a cancelled turn: the text streamed
// so far, if any, and a Finish with StoppedReason. It is called after the
// Step's observers are flushed, so p is complete.
func (h *Handler) keepStopped(ctx context.Context, st *ledger.StoredThread, p *partialText) {
	var arts []artifact.Artifact
	if text := p.text(); text != "" {
		arts = append(arts, artifact.Text{Content: text})
	}
	arts = append(arts, artifact.Finish{Reason: StoppedReason})
	if err := st.Append(ledger.RoleAssistant, arts...); err != nil {
		h.cfg.logger.ErrorContext(ctx, "lode: web could not store a stopped answer", "thread", st.ID(), "err", err)
	}
}
