package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/lodeworks/lode/ledger"
)

// Metadata keys of conversations and their branches. A conversation is
// the thread a client names (the AI SDK Chat's id); an edited message or
// a regenerated answer makes a branch of it with ledger.Fork, a thread of
// its own, so that every earlier answer is kept.
const (
	// ConversationKey names the conversation a thread belongs to: on a
	// branch, the conversation's ID; on the conversation itself, its own
	// ID or nothing. A fork copies it, so a branch belongs to its
	// conversation from the moment it is stored. Threads whose key names
	// another thread are branches: GET /api/threads leaves them out, and
	// every route takes the conversation's ID, not theirs.
	ConversationKey = "lode.web.conversation"
	// BranchKey, on a conversation, holds the ID of the branch shown:
	// the one its routes read, run turns on and cancel. Absent (or the
	// conversation's own ID) means the conversation's own turns.
	BranchKey = "lode.web.branch"
)

// branchesKey, on a conversation, lists its branches in the order they
// were made, as JSON [{"id", "from", "at"}]: where each was forked, so
// that a replay tells where branches part without loading them. Only the
// conversation's own list is read; a fork's copy is left as it was.
const branchesKey = "lode.web.branches"

// branchRecord is one entry of branchesKey.
type branchRecord struct {
	ID   string `json:"id"`
	From string `json:"from"`
	At   int    `json:"at"`
}

// conversation is a caller's conversation as a request finds it: its
// own thread, and the branch shown (the same StoredThread when it shows
// its own turns).
type conversation struct {
	root  *ledger.StoredThread
	shown *ledger.StoredThread
	// pointer is the conversation's BranchKey as read: a claim finds it
	// unchanged, or the branch shown is another's now.
	pointer string
	// left are the branches shown before, open until close: a claim's
	// lease may still be released through one.
	left []*ledger.StoredThread
}

func (c *conversation) id() string { return c.root.ID() }

// close closes every thread c opened.
func (c *conversation) close() {
	c.keep()
	c.shown.Close()
}

// keep closes every thread c opened but the branch shown, and returns
// that: a turn that runs on it closes it when it ends.
func (c *conversation) keep() *ledger.StoredThread {
	for _, t := range c.left {
		if t != c.shown {
			t.Close()
		}
	}
	c.left = nil
	if c.root != c.shown {
		c.root.Close()
	}
	return c.shown
}

// isBranch says the thread with metadata meta and ID id is a branch of
// another thread's conversation.
func isBranch(id string, meta map[string]string) bool {
	conv := meta[ConversationKey]
	return conv != "" && conv != id
}

// loadConversation opens the caller's conversation id and its branch
// shown, answering 404 as load does, and for the ID of a branch too.
func (h *Handler) loadConversation(w http.ResponseWriter, r *http.Request, id string, who Identity) (*conversation, bool) {
	st, ok := h.load(w, r, id, who)
	if !ok {
		return nil, false
	}
	return h.conversationOf(w, r, st, who)
}

// conversationOf finds the branch shown of the caller's thread root,
// taking root over: on a refusal it is closed.
func (h *Handler) conversationOf(w http.ResponseWriter, r *http.Request, root *ledger.StoredThread, who Identity) (*conversation, bool) {
	id := root.ID()
	if isBranch(id, root.AllMetadata()) {
		root.Close()
		httpError(w, http.StatusNotFound, fmt.Sprintf("web: thread %q not found", id))
		return nil, false
	}
	b, _ := root.Metadata(BranchKey)
	c := &conversation{root: root, shown: root, pointer: b}
	if b == "" || b == id {
		return c, true
	}
	st, err := h.openBranch(r.Context(), id, b, who)
	if err != nil {
		if !errors.Is(err, ledger.ErrNotFound) {
			root.Close()
			h.cfg.logger.ErrorContext(r.Context(), "lode: web could not load a branch", "thread", id, "branch", b, "err", err)
			httpError(w, http.StatusInternalServerError, "web: the thread could not be loaded")
			return nil, false
		}
		// A pointer to no branch of this conversation (written by hand,
		// or its branch deleted) shows the conversation's own turns.
		h.cfg.logger.WarnContext(r.Context(), "lode: web conversation points to no branch of its own; showing its own turns", "thread", id, "branch", b)
		return c, true
	}
	c.shown = st
	return c, true
}

// openBranch loads the branch b of conversation conv, owned by who; a
// thread that is not one fails with ledger.ErrNotFound.
func (h *Handler) openBranch(ctx context.Context, conv, b string, who Identity) (*ledger.StoredThread, error) {
	if ledger.CheckID(b) != nil {
		return nil, ledger.ErrNotFound
	}
	st, err := h.store.Load(ctx, b)
	if err != nil {
		return nil, err
	}
	owner, _ := st.Metadata(OwnerKey)
	in, _ := st.Metadata(ConversationKey)
	if owner != who.Caller || in != conv {
		st.Close()
		return nil, ledger.ErrNotFound
	}
	return st, nil
}

// branches is conversation root's list of branches.
func branches(root *ledger.StoredThread) []branchRecord {
	raw, ok := root.Metadata(branchesKey)
	if !ok || raw == "" {
		return nil
	}
	var bs []branchRecord
	if json.Unmarshal([]byte(raw), &bs) != nil {
		return nil
	}
	return bs
}

// fork makes a new branch of c from the branch shown, keeping its first
// at turns, and returns it open. The branch shown is claimed by the
// caller. What web keeps for the dropped messages (their usage) is
// blanked in the branch, the way a key is dropped from a ledger: it
// copies the rest of the parent's metadata. The conversation lists the
// branch once it is stored; it is not shown until show.
func (h *Handler) fork(ctx context.Context, c *conversation, at int) (*ledger.StoredThread, error) {
	ctx = context.WithoutCancel(ctx)
	conv := c.id()
	if v, _ := c.root.Metadata(ConversationKey); v != conv {
		// A conversation from before branches names itself first, so
		// that its fork is a branch of it as soon as it is stored.
		if err := c.root.SetMetadata(ConversationKey, conv); err != nil {
			return nil, err
		}
	}
	from := c.shown.ID()
	b, err := ledger.Fork(ctx, h.store, from, at)
	if err != nil {
		return nil, err
	}
	for k := range b.AllMetadata() {
		turn, ok := strings.CutPrefix(k, usageKey("turn-"))
		if n, err := strconv.Atoi(turn); ok && err == nil && n >= at {
			if err := b.SetMetadata(k, ""); err != nil {
				b.Close()
				return nil, err
			}
		}
	}
	bs := append(branches(c.root), branchRecord{ID: b.ID(), From: from, At: at})
	raw, _ := json.Marshal(bs)
	if err := c.root.SetMetadata(branchesKey, string(raw)); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// show makes b the branch c shows, and c.shown.
func (h *Handler) show(c *conversation, b *ledger.StoredThread) error {
	v := b.ID()
	if v == c.id() {
		v = ""
	}
	if err := c.root.SetMetadata(BranchKey, v); err != nil {
		return err
	}
	c.pointer = v
	if c.shown != c.root {
		c.left = append(c.left, c.shown)
	}
	c.shown = b
	return nil
}

// branchOff forks c's branch shown, claimed by run, at turn at, and
// shows the fork, claimed by run in its place: the fork's lease is taken
// before the conversation points to it, and the old branch's released
// after, so that no moment finds the branch shown unclaimed.
func (h *Handler) branchOff(ctx context.Context, c *conversation, run *running, at int) error {
	b, err := h.fork(ctx, c, at)
	if err != nil {
		return err
	}
	l, err := h.acquire(ctx, b)
	if err != nil {
		b.Close()
		return err
	}
	if err := h.show(c, b); err != nil {
		l.end(ctx)
		b.Close()
		return err
	}
	h.mu.Lock()
	old := run.lease
	run.lease = l
	h.mu.Unlock()
	old.end(ctx)
	return nil
}

// uiBranch is a message's place among the versions of it that the
// conversation's branches hold: this is version Index (from 1) of Count,
// and Branches[i] is the branch to switch to for version i+1 (this
// message's own is the branch shown).
type uiBranch struct {
	Index    int      `json:"index"`
	Count    int      `json:"count"`
	Branches []string `json:"branches"`
}

// withBranches gives each of msgs (the branch shown's) that has other
// versions in c's branches its uiBranch, in its metadata.
//
// A turn of a thread is its own (a turn it stored after its fork) or
// its parent's at the same index. Two threads show the same version of
// the message at turn k when the same thread owns their turn k; they
// share what comes before it when the same thread owns turn k-1. So the
// versions of a message at k are the distinct owners of turn k among
// the threads that share the branch shown's turn k-1, in the order the
// threads were made (the conversation first); to switch to a version is
// to show the newest thread holding it.
func withBranches(c *conversation, msgs []uiMessage) {
	bs := branches(c.root)
	if len(bs) == 0 {
		return
	}
	conv := c.id()
	parent := map[string]branchRecord{}
	order := []string{conv}
	for _, b := range bs {
		if b.ID == conv || b.From == "" {
			continue
		}
		if _, dup := parent[b.ID]; dup {
			continue
		}
		parent[b.ID] = b
		order = append(order, b.ID)
	}
	owner := func(t string, k int) string {
		for range len(order) {
			b, ok := parent[t]
			if !ok || k >= b.At {
				return t
			}
			t = b.From
		}
		return t
	}
	shown := c.shown.ID()
	if _, ok := parent[shown]; !ok && shown != conv {
		return
	}
	for i := range msgs {
		k, err := strconv.Atoi(strings.TrimPrefix(msgs[i].ID, "turn-"))
		if err != nil {
			continue
		}
		var versions []string
		newest := map[string]string{}
		for _, t := range order {
			if k > 0 && owner(t, k-1) != owner(shown, k-1) {
				continue
			}
			v := owner(t, k)
			if _, ok := newest[v]; !ok {
				versions = append(versions, v)
			}
			newest[v] = t
		}
		if len(versions) < 2 {
			continue
		}
		mine := owner(shown, k)
		ub := &uiBranch{Count: len(versions), Branches: make([]string, len(versions))}
		for j, v := range versions {
			ub.Branches[j] = newest[v]
			if v == mine {
				ub.Index = j + 1
				ub.Branches[j] = shown
			}
		}
		md, _ := msgs[i].Metadata.(*uiMetadata)
		if md == nil {
			md = &uiMetadata{}
		}
		md.Branch = ub
		msgs[i].Metadata = md
	}
}

// switchRequest is the body of POST /api/threads/{id}/branch.
type switchRequest struct {
	Branch string `json:"branch"`
}

// switchBranch shows another branch of the caller's conversation:
// {"branch": ID}, an ID from a message's metadata.branch.branches (the
// conversation's own ID shows its own turns). It answers the thread as
// GET /api/threads/{id} does. 400 for a body without a branch, 404 for
// an ID that is no branch of this conversation of this caller, 409 while
// a turn runs on the conversation; nothing changes then.
func (h *Handler) switchBranch(w http.ResponseWriter, r *http.Request) {
	who, ok := h.identify(w, r)
	if !ok {
		return
	}
	var req switchRequest
	if !h.decode(w, r, &req) {
		return
	}
	if req.Branch == "" {
		httpError(w, http.StatusBadRequest, `web: no branch: send {"branch": ID}, an ID from a message's metadata.branch.branches`)
		return
	}
	id := r.PathValue("id")
	c, ok := h.loadConversation(w, r, id, who)
	if !ok {
		return
	}
	var b *ledger.StoredThread
	if req.Branch == id {
		b = c.root
	} else {
		var err error
		b, err = h.openBranch(r.Context(), id, req.Branch, who)
		if errors.Is(err, ledger.ErrNotFound) {
			c.close()
			httpError(w, http.StatusNotFound, fmt.Sprintf("web: thread %q has no branch %q", id, req.Branch))
			return
		}
		if err != nil {
			c.close()
			h.cfg.logger.ErrorContext(r.Context(), "lode: web could not load a branch", "thread", id, "branch", req.Branch, "err", err)
			httpError(w, http.StatusInternalServerError, "web: the thread could not be loaded")
			return
		}
	}
	// The branch shown is claimed while the pointer moves, so that no
	// turn runs on it meanwhile, here or on another replica.
	_, cancel := context.WithCancelCause(h.base)
	run := newRunning(who.Caller, cancel)
	if ok, _ := h.claim(w, r, c, run); !ok {
		cancel(nil)
		if b != c.root {
			b.Close()
		}
		c.close()
		return
	}
	if b != c.root {
		c.left = append(c.left, b)
	}
	err := h.show(c, b)
	cancel(nil)
	h.release(id)
	defer c.close()
	if err != nil {
		h.storeError(w, r, id, err)
		return
	}
	h.view(w, r, c)
}

// remove deletes the caller's conversation and all its branches: 204.
// A turn running on it is 409, and nothing is deleted.
func (h *Handler) remove(w http.ResponseWriter, r *http.Request) {
	who, ok := h.identify(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	c, ok := h.loadConversation(w, r, id, who)
	if !ok {
		return
	}
	_, cancel := context.WithCancelCause(h.base)
	run := newRunning(who.Caller, cancel)
	if ok, _ := h.claim(w, r, c, run); !ok {
		cancel(nil)
		c.close()
		return
	}
	defer func() {
		cancel(nil)
		h.release(id)
	}()
	ctx := context.WithoutCancel(r.Context())
	// Every thread naming the conversation goes, those a crash left out
	// of its list included; the conversation itself goes last, so that a
	// failure half-way leaves it to delete again.
	ids := map[string]bool{}
	for _, b := range branches(c.root) {
		ids[b.ID] = true
	}
	for info, err := range h.store.List(ctx) {
		if err == nil && info.Metadata[ConversationKey] == id && info.ID != id && info.Metadata[OwnerKey] == who.Caller {
			ids[info.ID] = true
		}
	}
	c.close()
	for b := range ids {
		if err := h.store.Delete(ctx, b); err != nil && !errors.Is(err, ledger.ErrNotFound) {
			h.storeError(w, r, id, err)
			return
		}
	}
	if err := h.store.Delete(ctx, id); err != nil && !errors.Is(err, ledger.ErrNotFound) {
		h.storeError(w, r, id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
