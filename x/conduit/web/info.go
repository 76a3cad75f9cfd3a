package web

import (
	"encoding/json"
	"net/http"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/auth"
)

// infoView is what GET /api/info answers: what the page shows before the
// first message.
type infoView struct {
	// Model is the provider's Model(), when it has that method.
	Model string     `json:"model"`
	Tools []toolView `json:"tools"`
	// User is the caller, when authenticated; Session says the request
	// came with a session cookie (WithSessions), which POST /api/logout
	// ends: the page then offers to log out.
	User    string `json:"user,omitempty"`
	Session bool   `json:"session,omitempty"`
}

type toolView struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// asCaller is a thread as the caller of a request sees it: its user,
// tenant and role are the caller's, as they will be once the caller posts
// to it.
type asCaller struct {
	ledger.State
	who Identity
}

func (a asCaller) Metadata(key string) (string, bool) {
	switch key {
	case RoleKey:
		return a.who.Role, true
	case UserKey:
		return a.who.Caller, true
	case TenantKey:
		return a.who.Tenant, true
	}
	return a.State.Metadata(key)
}

// info answers the model's name and the tools a turn of the caller would
// offer: the configured invoke options, filters included, resolved on the
// caller's thread (?thread=ID) or, without one, on an empty thread of the
// caller's. Nothing is stored.
func (h *Handler) info(w http.ResponseWriter, r *http.Request) {
	who, ok := h.identify(w, r)
	if !ok {
		return
	}
	var st ledger.State
	if id := r.URL.Query().Get("thread"); id != "" {
		stored, ok := h.load(w, r, id, who)
		if !ok {
			return
		}
		defer stored.Close()
		st = asCaller{State: stored, who: who}
	} else {
		meta := who.metadata()
		meta[OwnerKey] = who.Caller
		st = ledger.NewThread(ledger.WithMetadata(meta))
	}
	req, err := loop.New(h.cfg.loopOpts...).Request(r.Context(), st)
	if err != nil {
		h.cfg.logger.ErrorContext(r.Context(), "lode: web could not resolve the tools a turn offers", "err", err)
		httpError(w, http.StatusInternalServerError, "web: the tools offered could not be listed")
		return
	}
	v := infoView{Tools: make([]toolView, 0, len(req.Tools))}
	if h.cfg.authn != nil {
		v.User = who.Caller
	}
	if h.cfg.sessions != nil {
		if c, err := r.Cookie(auth.CookieName); err == nil && c.Value != "" {
			v.Session = true
		}
	}
	if m, ok := h.prov.(interface{ Model() string }); ok {
		v.Model = m.Model()
	}
	for _, t := range req.Tools {
		v.Tools = append(v.Tools, toolView{Name: t.Name, Description: t.Description})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
