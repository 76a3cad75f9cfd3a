package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// maxTitle bounds a thread's title, in runes.
const maxTitle = 80

// messages is st, conversation conv's branch, as UI messages; while
// calls wait, the last message ends with the data-approval part the page
// shows.
func (h *Handler) messages(conv string, st *ledger.StoredThread) []uiMessage {
	msgs := toUIMessages(st.Turns())
	withOutside(msgs, st.AllMetadata())
	if calls := loop.Pending(st); len(calls) > 0 && len(msgs) > 0 && msgs[len(msgs)-1].Role == "assistant" {
		ap := approvalPart(conv, calls)
		last := &msgs[len(msgs)-1]
		last.Parts = append(last.Parts, uiPart{Type: "data-approval", ID: ap["id"].(string), Data: ap["data"]})
	}
	return msgs
}

func (h *Handler) storeError(w http.ResponseWriter, r *http.Request, id string, err error) {
	h.cfg.logger.ErrorContext(r.Context(), "lode: web could not store a message", "thread", id, "err", err)
	if errors.Is(err, ledger.ErrConflict) {
		httpError(w, http.StatusConflict, fmt.Sprintf("web: thread %q was changed elsewhere: retry", id))
		return
	}
	httpError(w, http.StatusInternalServerError, "web: the message could not be stored")
}

// create makes an empty thread for the caller and answers 201 with its ID.
func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	who, ok := h.identify(w, r)
	if !ok {
		return
	}
	meta := who.metadata()
	meta[OwnerKey] = who.Caller
	st, err := h.store.Create(r.Context(), ledger.WithMetadata(meta))
	if err != nil {
		h.cfg.logger.ErrorContext(r.Context(), "lode: web could not create a thread", "err", err)
		httpError(w, http.StatusInternalServerError, "web: the thread could not be created")
		return
	}
	defer st.Close()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]string{"id": st.ID()})
}

// threadSummary is one entry of GET /api/threads.
type threadSummary struct {
	ID      string    `json:"id"`
	Title   string    `json:"title"`
	Updated time.Time `json:"updated"`
	Running bool      `json:"running"`
}

// list answers the caller's conversations, newest first:
//
//	{"threads": [{"id": "…", "title": "…", "updated": "2026-12-02T03:40:00Z", "running": false}, …]}
//
// title is the first user message of the branch shown on one line, cut
// at 80 characters with "…" ("" for a thread with no message yet);
// updated is when the conversation, or one of its branches, last changed
// (RFC 3339); running says a turn runs on it now. Only threads whose
// OwnerKey is the caller's are listed, and branches are not: they are
// their conversation's. A thread the store cannot read is left out and
// logged.
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	who, ok := h.identify(w, r)
	if !ok {
		return
	}
	out := []threadSummary{}
	shows := map[string]string{}               // conversation ID -> its branch shown
	branchesOf := map[string][]threadSummary{} // conversation ID -> its branches
	for info, err := range h.store.List(r.Context()) {
		if err != nil {
			if r.Context().Err() != nil {
				return
			}
			h.cfg.logger.WarnContext(r.Context(), "lode: web could not list a thread", "thread", info.ID, "err", err)
			continue
		}
		if owner, ok := info.Metadata[OwnerKey]; !ok || owner != who.Caller {
			continue
		}
		title, ok := info.Metadata[TitleKey]
		if !ok && info.Turns > 0 {
			title = h.storedTitle(r.Context(), info.ID)
		}
		sum := threadSummary{ID: info.ID, Title: title, Updated: info.Updated.UTC(), Running: liveLease(info.Metadata)}
		if isBranch(info.ID, info.Metadata) {
			conv := info.Metadata[ConversationKey]
			branchesOf[conv] = append(branchesOf[conv], sum)
			continue
		}
		if b := info.Metadata[BranchKey]; b != "" && b != info.ID {
			shows[info.ID] = b
		}
		out = append(out, sum)
	}
	h.mu.Lock()
	for i := range out {
		c := &out[i]
		shown := shows[c.ID]
		for _, b := range branchesOf[c.ID] {
			if b.Updated.After(c.Updated) {
				c.Updated = b.Updated
			}
			c.Running = c.Running || b.Running
			if b.ID == shown {
				c.Title = b.Title
			}
		}
		c.Running = c.Running || h.turns[c.ID] != nil
	}
	h.mu.Unlock()
	slices.SortStableFunc(out, func(a, b threadSummary) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"threads": out})
}

// storedTitle is the title of a thread stored before TitleKey was: its
// first user message.
func (h *Handler) storedTitle(ctx context.Context, id string) string {
	st, err := h.store.Load(ctx, id)
	if err != nil {
		return ""
	}
	defer st.Close()
	for _, t := range st.Turns() {
		if t.Role == ledger.RoleUser {
			for _, a := range t.Artifacts {
				if x, ok := a.(artifact.Text); ok && strings.TrimSpace(x.Content) != "" {
					return title(x.Content)
				}
			}
		}
	}
	return ""
}

// title is text on one line, cut at maxTitle runes.
func title(text string) string {
	t := oneLine(text)
	if utf8.RuneCountInString(t) <= maxTitle {
		return t
	}
	r := []rune(t)
	return strings.TrimSpace(string(r[:maxTitle-1])) + "…"
}

// threadView is what replay answers: the thread as UI messages.
type threadView struct {
	ID      string `json:"id"`
	Running bool   `json:"running"`
	// Branch is the ID of the branch shown: the conversation's own
	// when it shows its own turns.
	Branch   string      `json:"branch"`
	Messages []uiMessage `json:"messages"`
}

// replay answers the caller's conversation, its branch shown, as the AI
// SDK's UI messages, which useChat takes as its initial messages. A
// message with versions on other branches has metadata.branch (see
// uiBranch).
func (h *Handler) replay(w http.ResponseWriter, r *http.Request) {
	who, ok := h.identify(w, r)
	if !ok {
		return
	}
	c, ok := h.loadConversation(w, r, r.PathValue("id"), who)
	if !ok {
		return
	}
	defer c.close()
	h.view(w, r, c)
}

// view answers c as replay does.
func (h *Handler) view(w http.ResponseWriter, r *http.Request, c *conversation) {
	id := c.id()
	h.mu.Lock()
	busy := h.turns[id] != nil
	h.mu.Unlock()
	if _, elsewhere := h.leasedElsewhere(id, c.shown); elsewhere {
		busy = true
	}
	msgs := h.messages(id, c.shown)
	withBranches(c, msgs)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(threadView{ID: id, Running: busy, Branch: c.shown.ID(), Messages: msgs})
}
