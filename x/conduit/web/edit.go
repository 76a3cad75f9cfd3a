package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/memory"
)

// editCut is where the thread is cut for an edited user message: the
// turn of the stored message at the edited one's place in the client's
// list, which must be a user message. The client's list is the stored
// thread's (its own IDs for the messages it sent).
func editCut(turns []ledger.Turn, req *chatRequest) (int, error) {
	k := len(req.Messages) - 1
	if req.Messages[k].ID != req.MessageID {
		return 0, fmt.Errorf("web: edit: the last message is %q, not the edited message %q", req.Messages[k].ID, req.MessageID)
	}
	msgs := toUIMessages(turns)
	if k >= len(msgs) || msgs[k].Role != "user" {
		return 0, fmt.Errorf("web: edit: thread %q has no user message at %d, where message %q is", req.ID, k, req.MessageID)
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(msgs[k].ID, "turn-"))
	return n, nil
}

// firstUser is the index of the first user turn, or -1.
func firstUser(turns []ledger.Turn) int {
	for i, t := range turns {
		if t.Role == ledger.RoleUser {
			return i
		}
	}
	return -1
}

// regenerate answers the last user message of the conversation's
// branch shown again (or, with messageId, the user message before that
// assistant message, or that user message) on a new branch that forks
// the one shown after that message: the branch shown before keeps the
// earlier answer, and the user message is not stored twice.
func (h *Handler) regenerate(w http.ResponseWriter, r *http.Request, who Identity, req *chatRequest) {
	c, ok := h.loadConversation(w, r, req.ID, who)
	if !ok {
		return
	}
	turns := c.shown.Turns()
	cut := -1
	if req.MessageID != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(req.MessageID, "turn-"))
		switch {
		case err != nil || !strings.HasPrefix(req.MessageID, "turn-") || n < 0 || n >= len(turns):
		case memory.IsRecall(turns[n]) && n > 0 && turns[n-1].Role == ledger.RoleUser:
			cut = n // an answer's message starts at the facts recalled for it
		case turns[n].Role == ledger.RoleUser:
			cut = n + 1
		case turns[n].Role == ledger.RoleAssistant && n > 0 && turns[n-1].Role == ledger.RoleUser:
			cut = n
		}
		if cut < 0 {
			c.close()
			httpError(w, http.StatusBadRequest, fmt.Sprintf("web: regenerate: thread %q has no message %q that follows a user message", req.ID, req.MessageID))
			return
		}
	} else {
		for i := len(turns) - 1; i >= 0 && cut < 0; i-- {
			if turns[i].Role == ledger.RoleUser && !memory.IsRecall(turns[i]) {
				cut = i + 1
			}
		}
		if cut < 0 {
			c.close()
			httpError(w, http.StatusBadRequest, fmt.Sprintf("web: regenerate: thread %q has no user message to answer", req.ID))
			return
		}
	}
	runCtx, cancel := context.WithCancelCause(h.base)
	run := newRunning(who.Caller, cancel)
	if ok, _ := h.claim(w, r, c, run); !ok {
		cancel(nil)
		c.close()
		return
	}
	fail := func(err error) {
		cancel(nil)
		c.close()
		h.release(req.ID)
		h.storeError(w, r, req.ID, err)
	}
	if c.shown.Len() != len(turns) {
		// Taking the lease found the thread changed elsewhere since it
		// was read: the cut was made on an old copy.
		fail(ledger.ErrConflict)
		return
	}
	if cut < len(turns) {
		if err := h.branchOff(r.Context(), c, run, cut); err != nil {
			fail(err)
			return
		}
	}
	if err := stamp(c.shown, who); err != nil {
		fail(err)
		return
	}
	h.start(w, r, c, run, runCtx, cancel)
}
