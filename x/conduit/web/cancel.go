package web

import (
	"fmt"
	"net/http"
)

// cancel stops the turn running on the caller's thread and answers 204
// once the turn has ended (its stopped answer stored); with no turn
// running it answers 204 too.
func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) {
	who, ok := h.identify(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	h.mu.Lock()
	run := h.turns[id]
	h.mu.Unlock()
	if run != nil && run.owner == who.Caller {
		run.cancel(errCancelled)
		// The answer is 204 once the turn is stored and the thread free, so
		// that what the caller reads or sends next sees the turn's end.
		select {
		case <-run.ended:
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	c, ok := h.loadConversation(w, r, id, who)
	if !ok {
		return
	}
	defer c.close()
	if l, elsewhere := h.leasedElsewhere(id, c.shown); elsewhere {
		httpError(w, http.StatusConflict, fmt.Sprintf("web: the turn on thread %q runs on another server (%s): stop it there, or wait for it to end", id, l.Owner))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
