package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
)

// CardPath is where the server answers with its agent card, as the
// protocol's discovery asks.
const CardPath = "/.well-known/agent-card.json"

// DefaultMaxBodyBytes bounds a request's body without WithMaxBodyBytes.
const DefaultMaxBodyBytes = 1 << 20

// ErrOption matches every error NewServer, NewRemote and Mount report
// about their options.
var ErrOption = errors.New("a2a: invalid option")

// Option configures a Server.
type Option func(*config)

type config struct {
	loop        []loop.Option
	authn       auth.Authenticator
	anonRoles   []string
	card        a2a.AgentCard
	url         string
	skills      []a2a.AgentSkill
	tools       []tool.Tool
	push        []string
	hosts       map[string]bool
	maxBody     int64
	logger      *slog.Logger
	errs        []error
	recoverTime time.Duration
}

// WithLoopOptions configures the loop.Step that runs each task's turns:
// handlers (x/tool's Handler, whose approval rule makes calls wait),
// invoke options (the offered tools, the system prompt), limits, guards.
// The server adds an observer of its own and takes no lease.
func WithLoopOptions(opts ...loop.Option) Option {
	return func(c *config) { c.loop = append(c.loop, opts...) }
}

// WithAuthenticator makes every request but the agent card's prove who
// sent it: a request a does not accept is answered 401 and runs nothing.
// The identity it finds (user, tenant, roles) is written on the context's
// thread, where x/policy reads it, and owns the tasks and contexts the
// caller makes. The card then lists a bearer security scheme. nil means
// no authentication: every caller is the anonymous one of
// WithAnonymousRoles, and all share every task.
func WithAuthenticator(a auth.Authenticator) Option {
	return func(c *config) { c.authn = a }
}

// WithAnonymousRoles gives callers the roles x/policy decides by when no
// authenticator is set (ignored otherwise).
func WithAnonymousRoles(roles ...string) Option {
	return func(c *config) { c.anonRoles = append(c.anonRoles, roles...) }
}

// WithCard gives the agent card's name, description, version, provider
// and documentation; the server fills in what it knows itself
// (interfaces, capabilities, skills, security) over it.
func WithCard(card a2a.AgentCard) Option { return func(c *config) { c.card = card } }

// WithURL is the address callers reach the server at, as the card
// advertises it; without it the card names the address the card's
// request came to.
func WithURL(u string) Option { return func(c *config) { c.url = u } }

// WithSkills lists the agent's skills on its card; without it each tool
// of WithTools is a skill, and with neither the card lists one skill,
// "chat".
func WithSkills(skills ...a2a.AgentSkill) Option {
	return func(c *config) { c.skills = append(c.skills, skills...) }
}

// WithTools lists tools the agent offers, each as a skill on its card
// when WithSkills lists none. It only describes: which tools a turn may
// call is the loop's handler's and its filter's to say.
func WithTools(tools ...tool.Tool) Option {
	return func(c *config) { c.tools = append(c.tools, tools...) }
}

// WithPushDestinations turns push notifications on, to these destinations
// only: a caller's push config whose URL does not start with one of the
// prefixes (scheme, host and path, e.g. "https://hooks.example.com/a2a/")
// is refused. Without it the card says push is not supported and every
// push config is refused. The destinations are the operator's, so they
// may be on a private network.
func WithPushDestinations(prefixes ...string) Option {
	return func(c *config) {
		for _, p := range prefixes {
			u, err := url.Parse(p)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				c.errs = append(c.errs, fmt.Errorf("%w: WithPushDestinations %q: want an http or https URL prefix", ErrOption, p))
				continue
			}
			c.push = append(c.push, p)
		}
	}
}

// WithAllowedHosts accepts requests whose Host header names one of hosts
// ("*": any), besides loopback names and WithURL's host, which are always
// accepted. Any other Host is answered 403: a page in a browser cannot
// reach the agent through a name that resolves to loopback (DNS
// rebinding).
func WithAllowedHosts(hosts ...string) Option {
	return func(c *config) {
		if c.hosts == nil {
			c.hosts = map[string]bool{}
		}
		for _, h := range hosts {
			c.hosts[strings.ToLower(strings.TrimSpace(h))] = true
		}
	}
}

// WithMaxBodyBytes bounds a request's body; a bigger one is answered 413.
// n <= 0 means DefaultMaxBodyBytes.
func WithMaxBodyBytes(n int64) Option { return func(c *config) { c.maxBody = n } }

// WithLogger sets where the server logs failed turns; nil means
// slog.Default.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// Server serves a lode agent over A2A: JSON-RPC (A2A 1.0, and 0.3 by its
// method names) at "/", the HTTP+JSON binding at its paths, and the agent
// card at CardPath. Make one with NewServer.
type Server struct {
	cfg   config
	prov  provider.Provider
	store ledger.Store
	tasks *tasks

	rpc, rpc0, rest, cardH http.Handler
	card                   a2a.AgentCard

	base   context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	running map[a2a.TaskID]*turn  // by task
	busy    map[string]a2a.TaskID // context thread -> its running task
	wg      sync.WaitGroup
	closed  bool
	pushes  *pushConfigs
}

// turn is a task's turn running in this process.
type turn struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// errCanceled is the cause a cancelled turn's context carries.
var errCanceled = errors.New("a2a: the caller cancelled the task")

// NewServer makes a Server whose turns run on prov and whose contexts and
// tasks are threads in store (see the package doc).
func NewServer(prov provider.Provider, store ledger.Store, opts ...Option) (*Server, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if prov == nil {
		cfg.errs = append(cfg.errs, fmt.Errorf("%w: no provider", ErrOption))
	}
	if store == nil {
		cfg.errs = append(cfg.errs, fmt.Errorf("%w: no store: tasks and contexts are threads in a ledger.Store", ErrOption))
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return nil, err
	}
	if cfg.url != "" {
		u, err := url.Parse(cfg.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: WithURL %q: want the http or https address callers reach the server at", ErrOption, cfg.url)
		}
		WithAllowedHosts(u.Host, u.Hostname())(&cfg)
	}
	if cfg.maxBody <= 0 {
		cfg.maxBody = DefaultMaxBodyBytes
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	s := &Server{cfg: cfg, prov: prov, store: store, running: map[a2a.TaskID]*turn{}, busy: map[string]a2a.TaskID{}}
	s.base, s.cancel = context.WithCancel(context.Background())
	s.tasks = newTasks(store, ownerOf)
	s.card = s.makeCard()
	hopts := []a2asrv.RequestHandlerOption{
		a2asrv.WithTaskStore(s.tasks),
		a2asrv.WithCallInterceptors(interceptor{s}),
		a2asrv.WithLogger(cfg.logger),
		a2asrv.WithCapabilityChecks(&s.card.Capabilities),
	}
	if len(cfg.push) > 0 {
		s.pushes = &pushConfigs{allowed: cfg.push, ConfigStore: push.NewInMemoryStore()}
		sender := push.NewHTTPPushSender(&push.HTTPSenderConfig{AllowPrivateNetworks: true})
		hopts = append(hopts, a2asrv.WithPushNotifications(s.pushes, sender))
	}
	h := handler{RequestHandler: a2asrv.NewHandler(executor{s}, hopts...), tasks: s.tasks}
	s.rpc = a2asrv.NewJSONRPCHandler(h)
	s.rpc0 = a2av0.NewJSONRPCHandler(h)
	s.rest = a2asrv.NewRESTHandler(h)
	// The 1.0 card: a2a-go's union card for 0.3 clients writes security
	// schemes in 0.3's form, which 1.0 parsers (a2a-go's own) refuse.
	// It lists the 0.3 interface, which 0.3-aware clients pick.
	s.cardH = a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(s.cardFor))
	return s, nil
}

// makeCard is the card without its URLs, which depend on the request.
func (s *Server) makeCard() a2a.AgentCard {
	c := s.cfg.card
	if c.Name == "" {
		c.Name = "lode"
	}
	if c.Description == "" {
		c.Description = "A lode agent."
	}
	if c.Version == "" {
		c.Version = "1"
	}
	if len(c.DefaultInputModes) == 0 {
		c.DefaultInputModes = []string{"text/plain", "application/json"}
	}
	if len(c.DefaultOutputModes) == 0 {
		c.DefaultOutputModes = []string{"text/plain", "application/json"}
	}
	// Only what the server does: it streams, and pushes only when told
	// where to.
	c.Capabilities = a2a.AgentCapabilities{Streaming: true, PushNotifications: len(s.cfg.push) > 0}
	c.Skills = s.cfg.skills
	if len(c.Skills) == 0 {
		for _, t := range s.cfg.tools {
			c.Skills = append(c.Skills, a2a.AgentSkill{ID: t.Name, Name: t.Name, Description: t.Description, Tags: []string{"tool"}})
		}
	}
	if len(c.Skills) == 0 {
		c.Skills = []a2a.AgentSkill{{ID: "chat", Name: "chat", Description: c.Description, Tags: []string{"chat"}}}
	}
	c.SecuritySchemes, c.SecurityRequirements = nil, nil
	if s.cfg.authn != nil {
		c.SecuritySchemes = a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "a token lode.yaml's tokens: (or the trusted proxy) knows"}}
		c.SecurityRequirements = a2a.SecurityRequirementsOptions{{"bearer": {}}}
	}
	return c
}

// cardFor fills in the card's interfaces: WithURL's address, else the one
// the request came to.
func (s *Server) cardFor(ctx context.Context) (*a2a.AgentCard, error) {
	c := s.card
	base := s.cfg.url
	if base == "" {
		base = "http://localhost/"
		if r, ok := ctx.Value(requestKey{}).(*http.Request); ok {
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			base = scheme + "://" + r.Host + "/"
		}
	}
	c.SupportedInterfaces = []*a2a.AgentInterface{
		{URL: base, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
		{URL: strings.TrimSuffix(base, "/"), ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2a.Version},
		{URL: base, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
	}
	return &c, nil
}

// Card returns the agent card as CardPath serves it, with base as its
// address.
func (s *Server) Card() a2a.AgentCard {
	c, _ := s.cardFor(context.Background())
	return *c
}

type requestKey struct{}
type whoKey struct{}

// ownerOf names the owner of what a request makes: its authenticated
// user ("" for the anonymous caller).
func ownerOf(ctx context.Context) string {
	who, _ := ctx.Value(whoKey{}).(auth.Identity)
	return who.User
}

// ServeHTTP serves the card to anyone and everything else to callers the
// authenticator accepts (401 otherwise), with bodies bounded (413).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r.Host) {
		http.Error(w, fmt.Sprintf("a2a: Host %q is not allowed: serve with WithAllowedHosts (lode serve --allow-host) naming it", r.Host), http.StatusForbidden)
		return
	}
	if r.URL.Path == CardPath || r.URL.Path == "/.well-known/agent.json" {
		s.cardH.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, r)))
		return
	}
	who := auth.Identity{Roles: s.cfg.anonRoles}
	if s.cfg.authn != nil {
		var err error
		if who, err = s.cfg.authn.Authenticate(r); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lode"`)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
				"code": -31401, "message": "a2a: unauthenticated: send a token lode knows (Authorization: Bearer TOKEN)",
			}})
			return
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), whoKey{}, who))
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.maxBody)
	if r.URL.Path != "/" || r.Method != http.MethodPost {
		s.rest.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if _, big := errors.AsType[*http.MaxBytesError](err); big {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
			"code": -32600, "message": fmt.Sprintf("a2a: the request is larger than %d bytes", s.cfg.maxBody),
		}})
		return
	}
	if err != nil {
		return
	}
	var peek struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &peek)
	r.Body = io.NopCloser(bytes.NewReader(body))
	// 0.3's methods are "message/send", "tasks/get"…; 1.0's are
	// "SendMessage", "GetTask"….
	if strings.Contains(peek.Method, "/") {
		s.rpc0.ServeHTTP(w, r)
		return
	}
	s.rpc.ServeHTTP(w, r)
}

func (s *Server) hostAllowed(host string) bool {
	if s.cfg.hosts["*"] {
		return true
	}
	if host == "" {
		return false
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(strings.Trim(name, "[]"))
	if name == "localhost" {
		return true
	}
	if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
		return true
	}
	return s.cfg.hosts[strings.ToLower(host)] || s.cfg.hosts[name]
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Serve serves on ln until ctx ends, then closes the server.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		s.Close()
		return nil
	case err := <-errc:
		s.Close()
		return err
	}
}

// Close cancels the turns running and waits for them to end; their tasks
// stay as last stored, so Recover (here or in the next process over the
// same store) finishes them. The store is the caller's to close.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.tasks.closing.Store(true)
	s.cancel()
	s.wg.Wait()
	s.tasks.close()
	return nil
}
