package web

import (
	"net/http"
)

// resume answers the SDK's reconnectToStream (GET /api/chat/{id}/stream):
// the stream of the turn running on the caller's thread, from its start,
// then live; or, with no turn running, the thread's last answer replayed
// as one stream; or 204 when the thread ends with no answer (or the
// running turn outgrew what is kept for reattaching).
func (h *Handler) resume(w http.ResponseWriter, r *http.Request) {
	who, ok := h.identify(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if s := h.localStream(r.Context(), id, who.Caller); s != nil {
		h.reattach(w, r, id, s)
		return
	}
	c, ok := h.loadConversation(w, r, id, who)
	if !ok {
		return
	}
	defer c.close()
	st := c.shown
	// A turn another process runs is followed to its end; its answer is
	// then replayed, as one stream. Should that process die and this one
	// take the thread up meanwhile, the turn here is followed instead.
	if _, elsewhere := h.leasedElsewhere(id, st); elsewhere {
		if !h.follow(r.Context(), id, st) {
			if r.Context().Err() == nil {
				httpError(w, http.StatusInternalServerError, "web: the thread could not be read again")
			}
			return
		}
		if s := h.localStream(r.Context(), id, who.Caller); s != nil {
			h.reattach(w, r, id, s)
			return
		}
	}
	msgs := h.messages(id, st)
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "assistant" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	last := msgs[len(msgs)-1]
	frames := [][]byte{frame(startPart(last.ID, id))}
	for _, c := range messageChunks(last) {
		frames = append(frames, frame(c))
	}
	frames = append(frames, frame(map[string]string{"type": "finish"}), []byte(doneFrame))
	streamHeaders(w, id)
	rc := http.NewResponseController(w)
	if err := writeBatch(rc, w, frames, h.cfg.timeout); err != nil {
		h.cfg.logger.InfoContext(r.Context(), "lode: web replayed stream ended early", "thread", id, "err", err)
	}
}

// reattach streams the running turn s to a client that comes back to it:
// from its start, then live; 204 when its start is no longer kept.
func (h *Handler) reattach(w http.ResponseWriter, r *http.Request, id string, s *stream) {
	s.mu.Lock()
	lost := s.logLost
	s.mu.Unlock()
	if lost {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	streamHeaders(w, id)
	if err := s.follow(r.Context(), w, h.cfg.timeout); err != nil {
		h.cfg.logger.InfoContext(r.Context(), "lode: web resumed stream ended before its turn", "thread", id, "err", err)
	}
}
