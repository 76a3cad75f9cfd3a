package web

import (
	"errors"
	"net/http"
	"runtime/debug"

	"github.com/lodeworks/lode/x/auth"
)

// authenticate is identify with the configured authenticator: a request
// it does not authenticate is answered 401, one it could not check 503.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (who Identity, ok bool) {
	var id auth.Identity
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				h.cfg.logger.ErrorContext(r.Context(), "lode: web authenticator panicked", "panic", p, "stack", string(debug.Stack()))
				err = errors.New("web: the server could not check the credentials")
			}
		}()
		id, err = h.cfg.authn.Authenticate(r)
	}()
	switch {
	case err == nil:
		return IdentityOf(id), true
	case errors.Is(err, auth.ErrUnauthenticated):
		w.Header().Set("WWW-Authenticate", "Bearer")
		httpError(w, http.StatusUnauthorized, "web: unauthorized: "+err.Error())
	default:
		h.cfg.logger.ErrorContext(r.Context(), "lode: web could not check a request's credentials", "err", err)
		httpError(w, http.StatusServiceUnavailable, "web: the credentials could not be checked: retry")
	}
	return Identity{}, false
}

// loginRequest is the body of POST /api/login.
type loginRequest struct {
	Token string `json:"token"`
}

// login trades a token for a session cookie: 204 with the cookie, or 401
// for a token the sessions do not know. The token is compared in constant
// time and never written back or logged.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	if !h.decode(w, r, &req) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if _, err := h.cfg.sessions.Login(w, r, req.Token); err != nil {
		if errors.Is(err, auth.ErrUnauthenticated) {
			httpError(w, http.StatusUnauthorized, "web: the token is not valid")
			return
		}
		h.cfg.logger.ErrorContext(r.Context(), "lode: web could not log a caller in", "err", err)
		httpError(w, http.StatusInternalServerError, "web: the login failed: retry")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// logout ends the session of the request's cookie, on every replica that
// shares the sessions' store, and clears the cookie: 204, or 503 when the
// logout could not be kept (the cookie is cleared in this browser anyway).
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if err := h.cfg.sessions.Logout(w, r); err != nil {
		h.cfg.logger.ErrorContext(r.Context(), "lode: web could not keep a logout", "err", err)
		httpError(w, http.StatusServiceUnavailable, "web: the logout could not be kept: retry")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
