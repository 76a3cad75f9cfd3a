package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
)

// Defaults for the options that have one.
const (
	// DefaultMaxBodyBytes bounds a request body when WithMaxBodyBytes is not given.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultStreamBuffer is how many stream parts one response may have
	// queued for a slow browser when WithStreamBuffer is not given.
	DefaultStreamBuffer = 1024
	// DefaultStreamBufferBytes is how many bytes of stream parts one
	// response may have queued when WithStreamBufferBytes is not given.
	DefaultStreamBufferBytes = 1 << 20
	// DefaultWriteTimeout bounds each write of a stream to the browser
	// when WithWriteTimeout is not given.
	DefaultWriteTimeout = 30 * time.Second
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

// maxTitle bounds a thread's title, in runes.
const maxTitle = 80

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

// DisconnectPolicy says what happens to a turn whose browser goes away
// (or stops reading, so that a write to it times out).
type DisconnectPolicy int

const (
	// FinishOnDisconnect lets the turn run to its end and be stored; a
	// reload of the thread shows it. The zero value.
	FinishOnDisconnect DisconnectPolicy = iota
	// CancelOnDisconnect cancels the turn; what it stored so far stays.
	CancelOnDisconnect
)

// Option configures a Handler.
type Option func(*config)

type config struct {
	loopOpts   []loop.Option
	identify   func(*http.Request) (Identity, error)
	authn      auth.Authenticator
	sessions   *auth.Sessions
	maxBody    int64
	buffer     int
	bufBytes   int
	timeout    time.Duration
	maxTurns   int
	disconnect DisconnectPolicy
	hosts      []string
	lease      time.Duration
	logger     *slog.Logger
	errs       []error
}

// WithLoopOptions sets what every turn's loop.Step is built with: handlers
// (an x/tool Handler to run tools), invoke options (tools, filters), limits
// and tracing. A Step is built per request from these, plus the observer
// that feeds the response.
func WithLoopOptions(opts ...loop.Option) Option {
	return func(c *config) { c.loopOpts = append(c.loopOpts, opts...) }
}

// WithIdentify sets the hook that maps a request to its caller: a bearer
// token, a cookie, a header set by a proxy. An error answers 401 with the
// error's text. Nil (the default) makes every request the same anonymous
// caller, which suits a loopback, single-user server.
func WithIdentify(f func(r *http.Request) (Identity, error)) Option {
	return func(c *config) { c.identify = f }
}

// WithAuthenticator makes a every request's judge: a request a does not
// authenticate is answered 401 (503 when a could not check, e.g. its store
// failed) before anything runs, and the caller's user, tenant and roles
// are those a finds. It replaces WithIdentify; giving both is an error.
// A nil a is an error too: a door that authenticates nobody gives neither.
func WithAuthenticator(a auth.Authenticator) Option {
	return func(c *config) {
		if a == nil {
			c.errs = append(c.errs, fmt.Errorf("%w: WithAuthenticator(nil): give an auth.Authenticator, or leave the option out for a loopback server of one person", ErrOption))
		}
		c.authn = a
	}
}

// WithSessions routes the page's login and logout: POST /api/login trades
// {"token": TOKEN} for s's session cookie (204; 401 for a token s does not
// know), and POST /api/logout ends the cookie's session and clears it
// (204). s's cookie then authenticates every request, after
// WithAuthenticator's authenticator when one is given.
func WithSessions(s *auth.Sessions) Option {
	return func(c *config) {
		if s == nil {
			c.errs = append(c.errs, fmt.Errorf("%w: WithSessions(nil): give the auth.Sessions that issue the cookies", ErrOption))
		}
		c.sessions = s
	}
}

// WithMaxBodyBytes bounds a request body; a larger one is answered 413.
// 0 means DefaultMaxBodyBytes; a negative n is an error.
func WithMaxBodyBytes(n int64) Option {
	return func(c *config) {
		if n < 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: WithMaxBodyBytes(%d): want 0 (default) or more", ErrOption, n))
		}
		c.maxBody = n
	}
}

// WithStreamBuffer bounds how many stream parts wait for one browser.
// When that many wait, the turn waits for the browser to read: a slow
// browser slows its turn's stream from the model, and holds no more than
// this. 0 means DefaultStreamBuffer; a negative n is an error.
func WithStreamBuffer(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: WithStreamBuffer(%d): want 0 (default) or more", ErrOption, n))
		}
		c.buffer = n
	}
}

// WithStreamBufferBytes bounds the bytes of stream parts that wait for one
// browser, as WithStreamBuffer bounds parts; a single larger part is still
// sent, alone. 0 means DefaultStreamBufferBytes; a negative n is an error.
func WithStreamBufferBytes(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: WithStreamBufferBytes(%d): want 0 (default) or more", ErrOption, n))
		}
		c.bufBytes = n
	}
}

// WithWriteTimeout bounds each write of a stream to its browser, flush
// included. A browser that takes nothing for that long — it stopped
// reading — loses its stream, which is then treated as disconnected (see
// WithDisconnect). Time a turn spends waiting on the model or a tool does
// not count. 0 means DefaultWriteTimeout; a negative d is an error.
func WithWriteTimeout(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: WithWriteTimeout(%s): want 0 (default) or more", ErrOption, d))
		}
		c.timeout = d
	}
}

// WithMaxConcurrentTurns bounds the turns running at once across all
// threads; one more is answered 429. 0 means no bound; negative is an error.
func WithMaxConcurrentTurns(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: WithMaxConcurrentTurns(%d): want 0 (no bound) or more", ErrOption, n))
		}
		c.maxTurns = n
	}
}

// WithDisconnect sets what happens to a turn when its browser goes away.
func WithDisconnect(p DisconnectPolicy) Option {
	return func(c *config) {
		if p != FinishOnDisconnect && p != CancelOnDisconnect {
			c.errs = append(c.errs, fmt.Errorf("%w: WithDisconnect(%d): want FinishOnDisconnect or CancelOnDisconnect", ErrOption, p))
		}
		c.disconnect = p
	}
}

// WithAllowedHosts accepts requests whose Host is one of hosts, besides
// loopback names and addresses, which are always accepted. "*" accepts
// any Host. Without it a request for another Host is answered 403, which
// keeps a DNS-rebinding page from reaching a server on loopback.
func WithAllowedHosts(hosts ...string) Option {
	return func(c *config) {
		for _, h := range hosts {
			if strings.TrimSpace(h) == "" {
				c.errs = append(c.errs, fmt.Errorf("%w: WithAllowedHosts: empty host name", ErrOption))
				continue
			}
			c.hosts = append(c.hosts, strings.ToLower(strings.TrimSpace(h)))
		}
	}
}

// WithLogger sets where failed turns and hook panics are logged; nil means
// slog.Default.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

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

// chatRequest is the body useChat's default transport sends: the chat's
// ID and its messages. Only the last message is read: the store, not the
// browser, holds the history.
type chatRequest struct {
	ID       string      `json:"id"`
	Messages []uiMessage `json:"messages"`
	// Trigger is "submit-message" or "regenerate-message"; MessageID, on
	// a regenerate, names the message to answer again.
	Trigger   string `json:"trigger"`
	MessageID string `json:"messageId"`
}

func (h *Handler) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength > h.cfg.maxBody {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("web: request body of %d bytes exceeds the limit of %d", r.ContentLength, h.cfg.maxBody))
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, h.cfg.maxBody))
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("web: request body exceeds the limit of %d bytes", mbe.Limit))
			return false
		}
		httpError(w, http.StatusBadRequest, "web: the body is not valid JSON: "+err.Error())
		return false
	}
	return true
}

// userText returns the text of the last message, which must be the
// user's.
func (c *chatRequest) userText() (string, error) {
	if len(c.Messages) == 0 {
		return "", errors.New("web: no messages: send {\"id\": THREAD, \"messages\": [{\"role\": \"user\", \"parts\": [{\"type\": \"text\", \"text\": ...}]}]}")
	}
	m := c.Messages[len(c.Messages)-1]
	if m.Role != "user" {
		return "", fmt.Errorf("web: the last message has role %q: want \"user\"", m.Role)
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	if strings.TrimSpace(b.String()) == "" {
		return "", errors.New("web: the last message has no text")
	}
	return b.String(), nil
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
	for range 2 {
		st, err := h.store.Create(r.Context(), ledger.WithID(id), ledger.WithMetadata(meta))
		if err == nil {
			return st, true, true
		}
		if !errors.Is(err, ledger.ErrConflict) {
			h.cfg.logger.ErrorContext(r.Context(), "lode: web could not create a thread", "thread", id, "err", err)
			httpError(w, http.StatusInternalServerError, "web: the thread could not be created")
			return nil, false, false
		}
		// It exists: it is the caller's, or 404. Between the two calls it
		// may have been deleted, so creating is tried once more.
		st, err = h.store.Load(r.Context(), id)
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		if err != nil {
			h.cfg.logger.ErrorContext(r.Context(), "lode: web could not load a thread", "thread", id, "err", err)
			httpError(w, http.StatusInternalServerError, "web: the thread could not be loaded")
			return nil, false, false
		}
		if owner, _ := st.Metadata(OwnerKey); owner != who.Caller {
			st.Close()
			break
		}
		return st, false, true
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

// cancel stops the turn running on the caller's thread and answers 204
// once the turn has ended (its stopped answer stored); with no turn
// running it answers 204 too.
func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) {
	who, ok := h.identify(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	h.mu.Lock()
	run := h.turns[id]
	h.mu.Unlock()
	if run != nil && run.owner == who.Caller {
		run.cancel(errCancelled)
		// The answer is 204 once the turn is stored and the thread free, so
		// that what the caller reads or sends next sees the turn's end.
		select {
		case <-run.ended:
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	c, ok := h.loadConversation(w, r, id, who)
	if !ok {
		return
	}
	defer c.close()
	if l, elsewhere := h.leasedElsewhere(id, c.shown); elsewhere {
		httpError(w, http.StatusConflict, fmt.Sprintf("web: the turn on thread %q runs on another server (%s): stop it there, or wait for it to end", id, l.Owner))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Close cancels every running turn, waits for them to end, and makes later
// turns fail with 503. The store stays open: it is the caller's.
func (h *Handler) Close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.stop()
	h.wg.Wait()
	return nil
}

// Shutdown makes later turns fail with 503 and waits for the running ones
// to end; when ctx ends first it cancels them, waits, and returns ctx's
// error.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		h.stop()
		<-done
		return ctx.Err()
	}
}

// Serve answers HTTP requests on ln until ctx ends, then cancels the
// running turns, closes the connections and returns nil.
func (h *Handler) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	_ = h.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-done
	return nil
}
