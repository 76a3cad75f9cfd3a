package web

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/lodeworks/lode/ledger"
)

func (h *Handler) identify(w http.ResponseWriter, r *http.Request) (id Identity, ok bool) {
	if h.cfg.authn != nil {
		return h.authenticate(w, r)
	}
	if h.cfg.identify == nil {
		return Identity{}, true
	}
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				h.cfg.logger.ErrorContext(r.Context(), "lode: web identify hook panicked", "panic", p, "stack", string(debug.Stack()))
				err = errors.New("the server could not identify the request")
			}
		}()
		id, err = h.cfg.identify(r)
	}()
	if err != nil {
		w.Header().Set("WWW-Authenticate", "Bearer")
		httpError(w, http.StatusUnauthorized, "web: unauthorized: "+err.Error())
		return id, false
	}
	return id, true
}

// stamp writes who is about to run a turn on st: its user, tenant and
// roles (UserKey, TenantKey, RoleKey), from authentication only. A value
// the thread holds already is not written again: each write is a commit.
func stamp(st *ledger.StoredThread, who Identity) error {
	meta := who.metadata()
	for _, k := range []string{UserKey, TenantKey, RoleKey} {
		if v, ok := st.Metadata(k); ok && v == meta[k] {
			continue
		}
		if err := st.SetMetadata(k, meta[k]); err != nil {
			return err
		}
	}
	return nil
}

// load opens the caller's thread id, answering 404 when it is missing, not
// the caller's, or not a valid ID.
func (h *Handler) load(w http.ResponseWriter, r *http.Request, id string, who Identity) (*ledger.StoredThread, bool) {
	notFound := func() {
		httpError(w, http.StatusNotFound, fmt.Sprintf("web: thread %q not found", id))
	}
	if ledger.CheckID(id) != nil {
		notFound()
		return nil, false
	}
	st, err := h.store.Load(r.Context(), id)
	if errors.Is(err, ledger.ErrNotFound) {
		notFound()
		return nil, false
	}
	if err != nil {
		h.cfg.logger.ErrorContext(r.Context(), "lode: web could not load a thread", "thread", id, "err", err)
		httpError(w, http.StatusInternalServerError, "web: the thread could not be loaded")
		return nil, false
	}
	if owner, _ := st.Metadata(OwnerKey); owner != who.Caller {
		st.Close()
		notFound()
		return nil, false
	}
	return st, true
}

// open loads the caller's thread id, or creates it for the caller when
// no thread has that ID: a client such as the AI SDK's Chat names its
// chat itself, and its first message starts the thread. An empty id
// creates a thread with a new ID. A thread of another caller is 404, as
// in load. created says the thread is new.
func (h *Handler) open(w http.ResponseWriter, r *http.Request, id string, who Identity) (st *ledger.StoredThread, created, ok bool) {
	meta := who.metadata()
	meta[OwnerKey] = who.Caller
	if id == "" {
		st, err := h.store.Create(r.Context(), ledger.WithMetadata(meta))
		if err != nil {
			h.cfg.logger.ErrorContext(r.Context(), "lode: web could not create a thread", "err", err)
			httpError(w, http.StatusInternalServerError, "web: the thread could not be created")
			return nil, false, false
		}
		return st, true, true
	}
	if ledger.CheckID(id) != nil {
		httpError(w, http.StatusNotFound, fmt.Sprintf("web: thread %q not found", id))
		return nil, false, false
	}
	// Loaded first: every message after a conversation's first finds
	// its thread, and a create that conflicts costs a store write (the
	// file store's is a journal made, fsynced and removed). Between the
	// two calls another request may create the thread, or delete it, so
	// each is tried once more.
	for range 2 {
		st, err := h.store.Load(r.Context(), id)
		if err == nil {
			if owner, _ := st.Metadata(OwnerKey); owner != who.Caller {
				st.Close()
				break
			}
			return st, false, true
		}
		if !errors.Is(err, ledger.ErrNotFound) {
			h.cfg.logger.ErrorContext(r.Context(), "lode: web could not load a thread", "thread", id, "err", err)
			httpError(w, http.StatusInternalServerError, "web: the thread could not be loaded")
			return nil, false, false
		}
		st, err = h.store.Create(r.Context(), ledger.WithID(id), ledger.WithMetadata(meta))
		if err == nil {
			return st, true, true
		}
		if !errors.Is(err, ledger.ErrConflict) {
			h.cfg.logger.ErrorContext(r.Context(), "lode: web could not create a thread", "thread", id, "err", err)
			httpError(w, http.StatusInternalServerError, "web: the thread could not be created")
			return nil, false, false
		}
	}
	httpError(w, http.StatusNotFound, fmt.Sprintf("web: thread %q not found", id))
	return nil, false, false
}

// claim reserves the thread st for one turn: in this handler, then in
// the store, by taking the thread's lease before anything is written, so
// that no other process (another replica over the same store, a lode
// resume) runs a turn on it meanwhile. elsewhere says the refusal was
// another process's live lease.
//
// The claim is the conversation's: in this handler no two requests on
// one conversation run at once, whichever branch they find shown. In the
// store it is the lease of the branch shown, taken before the
// conversation's pointer is read again: a branch another process showed
// meanwhile is a conflict, as a thread changed elsewhere is.
func (h *Handler) claim(w http.ResponseWriter, r *http.Request, c *conversation, run *running) (ok, elsewhere bool) {
	id := c.id()
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		httpError(w, http.StatusServiceUnavailable, "web: the server is shutting down")
		return false, false
	case h.turns[id] != nil:
		h.mu.Unlock()
		httpError(w, http.StatusConflict, fmt.Sprintf("web: a turn is already running on thread %q: wait for it or cancel it", id))
		return false, false
	case h.cfg.maxTurns > 0 && len(h.turns) >= h.cfg.maxTurns:
		n := len(h.turns)
		h.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusTooManyRequests, fmt.Sprintf("web: %d turns are running, the most this server runs at once: retry later", n))
		return false, false
	}
	h.turns[id] = run
	h.wg.Add(1)
	h.mu.Unlock()
	l, err := h.acquire(r.Context(), c.shown)
	if err != nil {
		h.release(id)
		if busy, ok := errors.AsType[errBusyElsewhere](err); ok {
			httpError(w, http.StatusConflict, busyMessage(id, busy.holder))
			return false, true
		}
		h.storeError(w, r, id, err)
		return false, false
	}
	h.mu.Lock()
	run.lease = l
	h.mu.Unlock()
	if c.shown != c.root {
		err = c.root.Reload(r.Context())
	}
	if b, _ := c.root.Metadata(BranchKey); err == nil && b != c.pointer {
		err = fmt.Errorf("web: thread %s shows branch %q now: %w", id, b, ledger.ErrConflict)
	}
	if err != nil {
		h.release(id)
		h.storeError(w, r, id, err)
		return false, false
	}
	return true, false
}

func (h *Handler) unclaim(id string) {
	h.mu.Lock()
	if run := h.turns[id]; run != nil {
		close(run.ended)
	}
	delete(h.turns, id)
	h.mu.Unlock()
}

// release undoes claim for a turn that never started: its lease, if it
// took one, and its place in the handler.
func (h *Handler) release(id string) {
	h.mu.Lock()
	var l *turnLease
	if run := h.turns[id]; run != nil {
		l = run.lease
	}
	h.mu.Unlock()
	l.end(h.base)
	h.unclaim(id)
	h.wg.Done()
}
