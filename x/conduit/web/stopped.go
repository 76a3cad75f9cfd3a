package web

import (
	"context"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// StoppedReason is the artifact.Finish reason of an answer whose turn was
// cancelled: the caller pressed Stop (or, with CancelOnDisconnect, its
// browser left) or the handler closed. The handler stores such an answer
// as an assistant turn of the text streamed so far (when the stream's log
// still holds it) and this Finish, so that a reload shows what was shown,
// then "Stopped."; GET /api/threads/{id} ends its message with a
// data-stopped part. Adapters send no Finish to a model, and no empty
// assistant turn, so the model sees the partial text and nothing more.
const StoppedReason = loop.StoppedReason

// keepStopped stores the answer of a cancelled turn (loop.KeepStopped).
func (h *Handler) keepStopped(ctx context.Context, st *ledger.StoredThread, text string) {
	if err := loop.KeepStopped(st, text); err != nil {
		h.cfg.logger.WarnContext(ctx, "lode: web could not store a stopped answer", "thread", st.ID(), "err", err)
	}
}
