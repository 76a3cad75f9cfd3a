package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/auth"
)

// contentSecurityPolicy lets the page load its own script, style and
// API and nothing else; frame-ancestors 'none', like X-Frame-Options: DENY,
// keeps any other page from framing it, and its Approve button.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Metadata keys the handler writes on the threads it serves.
const (
	// OwnerKey holds the Identity.Caller that created the thread; only that
	// caller can read it, post to it or cancel its turn.
	OwnerKey = "lode.owner"
	// RoleKey holds the Identity.Role of the caller who posted the latest
	// message, set before the turn runs so a ToolFilter can read it with
	// st.Metadata(RoleKey). It is auth.RolesKey.
	RoleKey = auth.RolesKey
	// UserKey holds the Identity.Caller who posted the latest message,
	// and TenantKey its Identity.Tenant, set with RoleKey. They are
	// x/auth's keys: x/policy's tenants: limits read TenantKey.
	UserKey   = auth.UserKey
	TenantKey = auth.TenantKey
	// TitleKey holds the thread's title, its first user message trimmed
	// (see GET /api/threads), so that listing threads reads no history.
	TitleKey = "lode.title"
)

// Errors New reports, joined when several options are wrong.
var (
	ErrNoProvider = errors.New("web: no provider given: pass one to New")
	ErrNoStore    = errors.New("web: no ledger.Store given: pass one to New, e.g. from ledger/file.Open")
	ErrOption     = errors.New("web: invalid option")
)

// Identity is who sent a request, as authentication decides it
// (WithAuthenticator, WithSessions, or the WithIdentify hook); never as a
// request body says.
type Identity struct {
	// Caller names the person or client: an auth.Identity's User. Threads
	// belong to the caller that created them; the empty Caller is a caller
	// like any other.
	Caller string
	// Role is copied into the thread's metadata under RoleKey before each
	// turn, so that per-turn tool filters can act on it. Several roles are
	// written comma-separated, as x/policy reads them.
	Role string
	// Tenant is copied into the thread's metadata under TenantKey with
	// Role, so that x/policy's tenants: limits bind the caller's tenant.
	Tenant string
}

// IdentityOf is the Identity a request authenticated as id has.
func IdentityOf(id auth.Identity) Identity {
	return Identity{Caller: id.User, Role: strings.Join(id.Roles, ","), Tenant: id.Tenant}
}

// metadata is what a thread says of who: its user, tenant and roles.
func (who Identity) metadata() map[string]string {
	return map[string]string{UserKey: who.Caller, TenantKey: who.Tenant, RoleKey: who.Role}
}

//go:embed page
var pageFS embed.FS

// Handler serves an agent over HTTP: the chat page, and turns streamed as
// the AI SDK's UI message stream. It is safe for concurrent use.
type Handler struct {
	cfg   config
	prov  provider.Provider
	store ledger.Store
	mux   *http.ServeMux
	cop   *http.CrossOriginProtection

	base   context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	turns  map[string]*running // by conversation ID
}

// running is a turn in flight on one conversation, on its branch shown.
type running struct {
	owner  string
	lease  *turnLease // the thread's lease in the store, once taken
	cancel context.CancelCauseFunc
	s      *stream       // set once the turn's stream exists, under Handler.mu
	ready  chan struct{} // closed once s is set
	ended  chan struct{} // closed once the turn is stored and the thread free
}

func newRunning(owner string, cancel context.CancelCauseFunc) *running {
	return &running{owner: owner, cancel: cancel, ready: make(chan struct{}), ended: make(chan struct{})}
}

// errCancelled is the cause of a turn cancelled by its caller.
var errCancelled = errors.New("web: the turn was cancelled by the caller")

// errDisconnected is the cause of a turn cancelled because its browser left.
var errDisconnected = errors.New("web: the browser disconnected")

// New returns a Handler that runs turns with prov on threads kept in store.
// Every option is checked; the problems are returned together, each
// wrapping ErrOption.
func New(prov provider.Provider, store ledger.Store, opts ...Option) (*Handler, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	errs := c.errs
	if prov == nil {
		errs = append(errs, ErrNoProvider)
	}
	if c.identify != nil && (c.authn != nil || c.sessions != nil) {
		errs = append(errs, fmt.Errorf("%w: WithIdentify and WithAuthenticator (or WithSessions) both given: give one", ErrOption))
	}
	if store == nil {
		errs = append(errs, ErrNoStore)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if c.maxBody == 0 {
		c.maxBody = DefaultMaxBodyBytes
	}
	if c.buffer == 0 {
		c.buffer = DefaultStreamBuffer
	}
	if c.bufBytes == 0 {
		c.bufBytes = DefaultStreamBufferBytes
	}
	if c.timeout == 0 {
		c.timeout = DefaultWriteTimeout
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.sessions != nil {
		c.authn = auth.Chain(c.authn, c.sessions)
	}
	if c.lease == 0 {
		c.lease = DefaultLease
	}
	h := &Handler{cfg: c, prov: prov, store: store, turns: map[string]*running{}, cop: http.NewCrossOriginProtection()}
	h.base, h.stop = context.WithCancel(context.Background())
	page, _ := fs.Sub(pageFS, "page")
	files := http.FileServerFS(page)
	h.mux = http.NewServeMux()
	h.mux.Handle("GET /{$}", files)
	h.mux.Handle("GET /markdown.js", files)
	h.mux.Handle("GET /app.js", files)
	h.mux.Handle("GET /app.css", files)
	h.mux.HandleFunc("POST /api/chat", h.chat)
	h.mux.HandleFunc("GET /api/chat/{id}/stream", h.resume)
	h.mux.HandleFunc("POST /api/threads", h.create)
	h.mux.HandleFunc("GET /api/threads", h.list)
	h.mux.HandleFunc("GET /api/threads/{id}", h.replay)
	h.mux.HandleFunc("DELETE /api/threads/{id}", h.remove)
	h.mux.HandleFunc("POST /api/threads/{id}/branch", h.switchBranch)
	h.mux.HandleFunc("POST /api/threads/{id}/cancel", h.cancel)
	h.mux.HandleFunc("POST /api/threads/{id}/decide", h.decide)
	h.mux.HandleFunc("GET /api/info", h.info)
	if c.sessions != nil {
		h.mux.HandleFunc("POST /api/login", h.login)
		h.mux.HandleFunc("POST /api/logout", h.logout)
	}
	return h, nil
}

// ServeHTTP routes a request. Every request passes these checks, in this
// order, and the first that fails answers with a one-line message:
//
//  1. its Host is loopback or allowed (WithAllowedHosts), and a browser's
//     cross-origin POST is refused (http.CrossOriginProtection): 403;
//  2. the path is known (404) and the method is one it takes (405, with Allow);
//  3. it is authenticated (WithAuthenticator, WithSessions or the
//     WithIdentify hook): 401, or 503 when the credentials could not be
//     checked; POST /api/login and /api/logout are not;
//  4. the body fits WithMaxBodyBytes: 413;
//  5. the body is JSON of the expected shape: 400;
//  6. the thread exists and belongs to the caller: 404 either way, so
//     that no one can probe for another caller's threads;
//  7. no other turn runs on the thread (409), in this handler or in
//     another process that holds the thread's lease in the store (see
//     WithLease), and the handler runs fewer than WithMaxConcurrentTurns
//     turns (429).
//
// A request that fails a check changes nothing in the store. POST
// /api/chat answers 503 after Close.
//
// Every response, whatever its route or status, carries a strict
// Content-Security-Policy (the page's own script, style and API only, and
// frame-ancestors 'none'), X-Frame-Options: DENY, X-Content-Type-Options:
// nosniff and Referrer-Policy: no-referrer.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if !h.hostAllowed(r.Host) {
		httpError(w, http.StatusForbidden, fmt.Sprintf("web: Host %q is not allowed", r.Host))
		return
	}
	if err := h.cop.Check(r); err != nil {
		httpError(w, http.StatusForbidden, "web: cross-origin request refused")
		return
	}
	h.mux.ServeHTTP(w, r)
}

// httpError answers with one line of text.
func httpError(w http.ResponseWriter, code int, msg string) {
	msg = strings.ReplaceAll(msg, "\n", " ")
	http.Error(w, msg, code)
}

func (h *Handler) hostAllowed(hostport string) bool {
	host := hostport
	if hp, _, err := net.SplitHostPort(hostport); err == nil {
		host = hp
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range h.cfg.hosts {
		if a == "*" || a == host {
			return true
		}
	}
	return false
}
