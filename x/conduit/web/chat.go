package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// chat runs a turn on a thread and streams it back, as the AI SDK's
// DefaultChatTransport asks: a new user message (trigger submit-message),
// the answers to approval requests (the last message is the assistant's,
// with tool parts in state approval-responded), or the last answer again
// (trigger regenerate-message). An empty id starts a new thread; its ID is
// in the X-Lode-Thread header and the start part's messageMetadata.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	who, ok := h.identify(w, r)
	if !ok {
		return
	}
	var req chatRequest
	if !h.decode(w, r, &req) {
		return
	}
	if req.Trigger == "regenerate-message" {
		h.regenerate(w, r, who, &req)
		return
	}
	if answers, ok, err := req.approvals(who.Caller); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	} else if ok {
		c, ok := h.loadConversation(w, r, req.ID, who)
		if !ok {
			return
		}
		// Only the calls that wait are decided: the client sends back
		// every part it holds, decided ones included.
		h.continueTurn(w, r, who, c, answers, false)
		return
	}
	text, err := req.userText()
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	root, created, ok := h.open(w, r, req.ID, who)
	if !ok {
		return
	}
	id := root.ID()
	c := &conversation{root: root, shown: root}
	if !created {
		if c, ok = h.conversationOf(w, r, root, who); !ok {
			return
		}
	}
	runCtx, cancel := context.WithCancelCause(h.base)
	run := newRunning(who.Caller, cancel)
	if ok, elsewhere := h.claim(w, r, c, run); !ok {
		cancel(nil)
		c.close()
		// A refused request leaves the store as it was, unless another
		// request with the same ID runs on the thread now.
		h.mu.Lock()
		busy := h.turns[id] != nil || elsewhere
		h.mu.Unlock()
		if created && !busy {
			if err := h.store.Delete(context.WithoutCancel(r.Context()), id); err != nil {
				h.cfg.logger.WarnContext(r.Context(), "lode: web could not delete the thread a refused request made", "thread", id, "err", err)
			}
		}
		return
	}
	started := false
	defer func() {
		if !started {
			cancel(nil)
			c.close()
			h.release(id)
		}
	}()
	if req.MessageID != "" {
		// An edited message (the SDK's sendMessage with a messageId)
		// is stored on a new branch that forks the one shown before
		// it; the branch shown before keeps it and what followed.
		cut, err := editCut(c.shown.Turns(), &req)
		if err != nil {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
		if cut < c.shown.Len() {
			if err := h.branchOff(r.Context(), c, run, cut); err != nil {
				h.storeError(w, r, id, err)
				return
			}
		}
		st := c.shown
		if firstUser(st.Turns()) < 0 {
			if err := st.SetMetadata(TitleKey, title(text)); err != nil {
				h.storeError(w, r, id, err)
				return
			}
		}
	}
	st := c.shown
	if err := stamp(st, who); err != nil {
		h.storeError(w, r, id, err)
		return
	}
	// A message stored while calls wait would stand between those calls
	// and their results; the calls are decided first.
	if calls := loop.Pending(st); len(calls) > 0 {
		httpError(w, http.StatusConflict, fmt.Sprintf("web: thread %q has %d tool call(s) waiting for approval (%s): decide them before sending a message", id, len(calls), pendingNames(calls)))
		return
	}
	if _, ok := st.Metadata(TitleKey); !ok {
		if err := st.SetMetadata(TitleKey, title(text)); err != nil {
			h.storeError(w, r, id, err)
			return
		}
	}
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: text}); err != nil {
		h.storeError(w, r, id, err)
		return
	}
	started = true
	h.start(w, r, c, run, runCtx, cancel)
}

// start streams a new answer on the claimed conversation c's branch
// shown: a message whose first turn is the next one stored.
func (h *Handler) start(w http.ResponseWriter, r *http.Request, c *conversation, run *running, runCtx context.Context, cancel context.CancelCauseFunc) {
	id := c.id()
	st := c.keep()
	s := newStream(h.cfg.buffer, h.cfg.bufBytes, h.logMax(), messageID(st.Len()), id, nil)
	h.attach(run, s)
	step := h.step(s)
	run.lease.start(closedChan, cancel)
	go h.runTurn(runCtx, cancel, id, st, s, run.lease, nil, func(ctx context.Context) error {
		_, err := step.Run(ctx, st, h.prov)
		return err
	}, step)
	h.respond(w, r, s, id, cancel)
}

// logMax bounds what a turn keeps for clients that reattach: as much as
// its response may queue.
func (h *Handler) logMax() int { return h.cfg.bufBytes }

// attach makes s the stream a client reattaching to run's thread follows.
func (h *Handler) attach(run *running, s *stream) {
	h.mu.Lock()
	run.s = s
	h.mu.Unlock()
	close(run.ready)
}

// localStream is the stream of the turn this handler runs on thread id
// for caller, or nil. A turn claimed but not yet streaming (its user
// message being stored) is waited for, so that a client reattaching then
// follows it rather than finding the thread ending with a question.
func (h *Handler) localStream(ctx context.Context, id, caller string) *stream {
	h.mu.Lock()
	run := h.turns[id]
	h.mu.Unlock()
	if run == nil || run.owner != caller {
		return nil
	}
	select {
	case <-run.ready:
	case <-run.ended:
	case <-ctx.Done():
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return run.s
}

// pendingNames lists waiting calls as name (id), for an error message.
func pendingNames(calls []artifact.Pending) string {
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = fmt.Sprintf("%s (%s)", c.Name, c.ToolCallID)
	}
	return strings.Join(parts, ", ")
}

// step builds a request's loop.Step: the configured options and s. The
// loop takes no lease of its own: the turn holds the thread's (claim).
func (h *Handler) step(s *stream) *loop.Step {
	return loop.New(append(h.cfg.loopOpts[:len(h.cfg.loopOpts):len(h.cfg.loopOpts)], loop.WithObserver(s), loop.WithLease(-1))...)
}

// closedChan is a channel that is always ready.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// runTurn runs a claimed turn of conversation conv, on its branch st, to
// its end and ends its stream; done, when not nil, gets the turn's error
// before the stream ends.
func (h *Handler) runTurn(runCtx context.Context, cancel context.CancelCauseFunc, conv string, st *ledger.StoredThread, s *stream, lease *turnLease, done chan<- error, run func(context.Context) error, step *loop.Step) {
	defer h.wg.Done()
	err := run(runCtx)
	// The observer waits only on its browser's writes, each bounded by
	// the write timeout, or on nothing once the browser has left.
	_ = step.Flush(context.Background())
	cause := context.Cause(runCtx)
	var refused *loop.DecisionError
	te, tripped := errors.AsType[*loop.TripError](err)
	switch {
	case tripped && cause == nil:
		// The calls the trip kept from running are stored, not observed.
		s.unrun(st.Turns())
		if te.Err != nil {
			h.cfg.logger.WarnContext(runCtx, "lode: web guard failed, so its turn stopped", "thread", st.ID(), "guard", te.Guard, "at", te.At, "err", te.Err)
		} else {
			h.cfg.logger.InfoContext(runCtx, "lode: web turn stopped by a guard", "thread", st.ID(), "guard", te.Guard, "at", te.At)
		}
	case err != nil && cause == nil && !errors.Is(err, loop.ErrPaused) && !errors.As(err, &refused):
		h.cfg.logger.WarnContext(runCtx, "lode: web turn failed", "thread", st.ID(), "err", err)
	}
	// A stopped answer keeps the text streamed so far, as the browser
	// showed it, and says it stopped: the stored thread and the client's
	// message agree, the model reads what the person read, and a reload
	// shows "Stopped." again.
	// A turn whose lease was lost writes nothing more: another process
	// has the thread now.
	if !lease.isLost() {
		if err != nil && cause != nil && !errors.Is(err, loop.ErrPaused) {
			h.keepStopped(context.WithoutCancel(runCtx), st, s.partial())
		}
		h.keepOutside(runCtx, st, s)
	}
	lease.end(runCtx)
	cancel(nil)
	st.Close()
	// The thread is free before the browser reads the end of the
	// stream, so that it can post its next message at once.
	h.unclaim(conv)
	if done != nil {
		done <- err
	}
	s.end(err, cause)
}

// keepOutside adds what s's UsageEvents counted to what the thread keeps
// for s's message under usageKey, so that a replay shows the figures the
// stream did.
func (h *Handler) keepOutside(ctx context.Context, st *ledger.StoredThread, s *stream) {
	if s.outside == (uiUsage{}) {
		return
	}
	key := usageKey(s.msgID)
	u := s.outside
	if raw, ok := st.Metadata(key); ok {
		var kept uiUsage
		if json.Unmarshal([]byte(raw), &kept) == nil {
			kept.plus(u)
			u = kept
		}
	}
	b, _ := json.Marshal(u)
	if err := st.SetMetadata(key, string(b)); err != nil {
		h.cfg.logger.WarnContext(ctx, "lode: web could not keep the usage of calls made outside the thread", "thread", st.ID(), "err", err)
	}
}

// streamHeaders starts a UI message stream response.
func streamHeaders(w http.ResponseWriter, id string) {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	hd.Set("x-vercel-ai-ui-message-stream", "v1")
	hd.Set("X-Lode-Thread", id)
	w.WriteHeader(http.StatusOK)
}

// respond streams s to the browser.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, s *stream, id string, cancel context.CancelCauseFunc) {
	streamHeaders(w, id)
	if err := s.pump(r.Context(), w, h.cfg.timeout); err != nil {
		h.cfg.logger.InfoContext(r.Context(), "lode: web stream ended before its turn; the browser left or stopped reading", "thread", id, "err", err)
		if h.cfg.disconnect == CancelOnDisconnect {
			cancel(errDisconnected)
		}
	}
}
