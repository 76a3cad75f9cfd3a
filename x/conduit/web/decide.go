package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// approvals returns the decisions of the SDK's client: when the last
// message is the assistant's and has tool parts in state
// approval-responded (the client's addToolApprovalResponse), one decision
// per such part, by caller. ok is false for any other request.
func (c *chatRequest) approvals(by string) (ds []artifact.Decision, ok bool, err error) {
	if len(c.Messages) == 0 {
		return nil, false, nil
	}
	m := c.Messages[len(c.Messages)-1]
	if m.Role != "assistant" {
		return nil, false, nil
	}
	for _, p := range m.Parts {
		if p.State != "approval-responded" || !strings.HasPrefix(p.Type, "tool-") {
			continue
		}
		if p.ToolCallID == "" || p.Approval == nil || p.Approval.Approved == nil {
			return nil, false, fmt.Errorf("web: the approval-responded part of call %q has no approval.approved", p.ToolCallID)
		}
		ds = append(ds, artifact.Decision{ToolCallID: p.ToolCallID, Approved: *p.Approval.Approved, Reason: p.Approval.Reason, By: by})
	}
	if len(ds) == 0 {
		return nil, false, nil
	}
	if c.ID == "" {
		return nil, false, errors.New("web: approvals sent with no thread id")
	}
	return ds, true, nil
}

// decideRequest is the body of POST /api/threads/{id}/decide.
type decideRequest struct {
	Decisions []struct {
		ID      string `json:"id"`
		Approve bool   `json:"approve"`
		Reason  string `json:"reason"`
		// Arguments, on an approval, replace the model's: a JSON object,
		// or a string holding one.
		Arguments json.RawMessage `json:"arguments"`
	} `json:"decisions"`
}

// decisions converts the request, with by as who decided.
func (d *decideRequest) decisions(by string) ([]artifact.Decision, error) {
	if len(d.Decisions) == 0 {
		return nil, errors.New(`web: no decisions: send {"decisions": [{"id": CALL, "approve": true}]}`)
	}
	out := make([]artifact.Decision, 0, len(d.Decisions))
	for _, x := range d.Decisions {
		if x.ID == "" {
			return nil, errors.New("web: a decision has no call id")
		}
		dec := artifact.Decision{ToolCallID: x.ID, Approved: x.Approve, Reason: x.Reason, By: by}
		if raw := strings.TrimSpace(string(x.Arguments)); raw != "" && raw != "null" {
			if !x.Approve {
				return nil, fmt.Errorf("web: decision on call %q: arguments are only taken with an approval", x.ID)
			}
			if raw[0] == '"' {
				if err := json.Unmarshal(x.Arguments, &raw); err != nil {
					return nil, fmt.Errorf("web: decision on call %q: %w", x.ID, err)
				}
			}
			dec.Arguments = raw
		}
		out = append(out, dec)
	}
	return out, nil
}

// decide records the caller's decisions on the thread's pending calls and
// streams the run that continues, as chat does. A malformed decision (a
// call the thread never had, edited arguments the tool refuses) is
// answered 400, and one on a call that waits for none (decided already,
// by anyone) 409, as the SDK's approvals over chat are; nothing is stored
// then.
func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	who, ok := h.identify(w, r)
	if !ok {
		return
	}
	var req decideRequest
	if !h.decode(w, r, &req) {
		return
	}
	decisions, err := req.decisions(who.Caller)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	c, ok := h.loadConversation(w, r, r.PathValue("id"), who)
	if !ok {
		return
	}
	h.continueTurn(w, r, who, c, decisions, true)
}

// decidable checks decisions against the calls of st that wait for one,
// and answers w when it refuses them. A decision naming a call the thread
// never had is a malformed request, 400 (the body, not the thread in the
// path, is wrong, so not 404); one on a call that does not wait (decided
// already, or run without asking) is 409, in the same words from both
// routes, so that an app tells "already decided" by the status alone.
// With all (POST /api/threads/{id}/decide) every decision must wait;
// without it (POST /api/chat, whose client sends back every approval it
// holds, decided ones included) the rest are dropped, and 409 is answered
// only when none waits. It returns the decisions to record. It is asked
// once the thread is claimed: a turn running on it, here or on another
// replica, is answered as such (the call waits for none while it runs),
// and what it reads cannot change under the lease.
func decidable(w http.ResponseWriter, id string, st ledger.State, ds []artifact.Decision, all bool) ([]artifact.Decision, bool) {
	waiting := make(map[string]bool)
	for _, p := range loop.Pending(st) {
		waiting[p.ToolCallID] = true
	}
	var keep []artifact.Decision
	stale := ""
	for _, d := range ds {
		switch {
		case waiting[d.ToolCallID]:
			keep = append(keep, d)
		case stale == "":
			stale = d.ToolCallID
		}
	}
	if stale == "" {
		return keep, true
	}
	// Reading the whole history is left to the refusals and the
	// client's decided parts, which are rare next to decisions.
	had := make(map[string]bool)
	for _, t := range st.Turns() {
		for _, a := range t.Artifacts {
			if c, ok := a.(artifact.ToolCall); ok {
				had[c.ID] = true
			}
		}
	}
	for _, d := range ds {
		if !had[d.ToolCallID] {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("web: thread %q has no tool call %q", id, d.ToolCallID))
			return nil, false
		}
	}
	if all || len(keep) == 0 {
		httpError(w, http.StatusConflict, notWaiting(id, stale))
		return nil, false
	}
	return keep, true
}

// notWaiting is the 409 answer to a decision on a call that waits for
// none, whichever route it came by.
func notWaiting(thread, call string) string {
	return fmt.Sprintf("web: tool call %q of thread %q waits for no decision: it was decided already, or ran without one", call, thread)
}

// continueTurn records decisions on the pending calls of c's branch
// shown with Resume and streams the rest of the turn as the continuation
// of the paused message: its start part has that message's ID, and the
// stream goes on from the decided calls' outputs. c is closed when the
// turn ends. all is decidable's: whether every decision must be on a
// waiting call.
func (h *Handler) continueTurn(w http.ResponseWriter, r *http.Request, who Identity, c *conversation, decisions []artifact.Decision, all bool) {
	id := c.id()
	runCtx, cancel := context.WithCancelCause(h.base)
	run := newRunning(who.Caller, cancel)
	if ok, _ := h.claim(w, r, c, run); !ok {
		cancel(nil)
		c.close()
		return
	}
	st := c.keep()
	decisions, ok := decidable(w, id, st, decisions, all)
	if !ok {
		cancel(nil)
		st.Close()
		h.release(id)
		return
	}
	if err := stamp(st, who); err != nil {
		cancel(nil)
		st.Close()
		h.release(id)
		h.storeError(w, r, id, err)
		return
	}
	msgs := h.messages(id, st)
	msgID := messageID(st.Len())
	var prior *uiMessage
	if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
		prior = &msgs[n-1]
		msgID = prior.ID
		// The data-approval part is the page's: the continued message
		// drops it once the calls are decided.
		prior.Parts = slices.DeleteFunc(prior.Parts, func(p uiPart) bool { return p.Type == "data-approval" })
	}
	s := newStream(h.cfg.buffer, h.cfg.bufBytes, h.logMax(), msgID, id, prior)
	s.asked = make(map[string]artifact.Pending)
	for _, p := range loop.Pending(st) {
		s.asked[p.ToolCallID] = p
	}
	h.attach(run, s)
	step := h.step(s)
	done := make(chan error, 1)
	// The lease is renewed once the decisions are stored: a renewal in
	// between would move the version Resume claims them at.
	run.lease.start(s.decided, cancel)
	go h.runTurn(runCtx, cancel, id, st, s, run.lease, done, func(ctx context.Context) error {
		_, err := step.Resume(ctx, st, h.prov, decisions)
		return err
	}, step)
	// Answer with a status until the decisions are recorded: a refused
	// decision stores nothing and streams nothing.
	select {
	case <-s.decided:
	case err := <-done:
		de, refused := errors.AsType[*loop.DecisionError](err)
		switch {
		case refused && (errors.Is(de.Err, loop.ErrNotPending) || errors.Is(de.Err, ledger.ErrConflict)):
			// decidable saw the call wait; another decider (or the turn
			// it ran in) got there first since.
			s.abandon()
			httpError(w, http.StatusConflict, notWaiting(id, de.ToolCallID))
			return
		case refused:
			s.abandon()
			httpError(w, http.StatusBadRequest, oneLine(strings.TrimPrefix(err.Error(), "loop: ")))
			return
		case errors.Is(err, ledger.ErrConflict):
			s.abandon()
			httpError(w, http.StatusConflict, oneLine(strings.TrimPrefix(err.Error(), "loop: ")))
			return
		}
	}
	h.respond(w, r, s, id, cancel)
}
