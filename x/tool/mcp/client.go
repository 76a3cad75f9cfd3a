package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/tool"
)

// Errors a Client reports; match them with errors.Is.
var (
	// ErrOption is wrapped by every error NewClient and NewServer return for
	// options that cannot work together or hold bad values.
	ErrOption = errors.New("mcp: invalid option")
	// ErrClosed is returned by a Client used after Close.
	ErrClosed = errors.New("mcp: client is closed")
	// ErrTimeout is wrapped when a server does not answer within the call
	// timeout (WithCallTimeout), and by the errors of the other requests
	// that were waiting on the session a timeout dropped.
	ErrTimeout = errors.New("mcp: server did not answer in time")
	// ErrConnectionLost is wrapped when the connection to a server broke
	// during a request (the process died, the HTTP server went away). The
	// next request reconnects.
	ErrConnectionLost = errors.New("mcp: connection to the server was lost")
)

// DefaultCallTimeout bounds each request to a server unless
// WithCallTimeout says otherwise: long enough for a slow tool, and shorter
// than the tool handler's own default (x/tool's DefaultTimeout, two
// minutes), so that a hung server is found out, and its session dropped,
// before the handler gives up on the call.
const DefaultCallTimeout = time.Minute

// DefaultConnectTimeout bounds connecting to a server (starting a stdio
// server's process and the MCP handshake, or opening an HTTP session)
// unless WithConnectTimeout says otherwise. It is apart from the call
// timeout because starting is often the slow part: npx fetching and
// starting a package takes tens of seconds on a cold cache.
const DefaultConnectTimeout = time.Minute

// DefaultStopTimeout is how long Close waits for a stdio server to exit
// after its stdin is closed, before it is signalled (SIGTERM, then SIGKILL).
const DefaultStopTimeout = 2 * time.Second

// Option configures a Client.
type Option func(*config)

type config struct {
	name string

	command   string
	args      []string
	env       []string
	parentEnv bool
	dir       string
	stderr    io.Writer
	stdioSet  bool

	url        string
	header     http.Header
	httpClient *http.Client

	transport func(context.Context) (sdk.Transport, error)

	callTimeout     time.Duration
	connectTimeout  time.Duration
	stopTimeout     time.Duration
	protocolVersion string

	features features

	// readOnly and trusted are the application's word on the server's
	// tools (WithReadOnly, WithTrusted), taken over the server's.
	readOnly bool
	trusted  []string
	// labels and toolLabels are the flow labels of the server's tools
	// (WithLabels); every tool's output is untrusted unless they say so.
	labels     Labels
	toolLabels map[string]Labels

	errs []error
}

func (c *config) fail(format string, a ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: "+format, append([]any{ErrOption}, a...)...))
}

// WithName names the server. The name prefixes its tools in a registry
// ("<name>__<tool>") and appears in every error; it is required and must
// be a valid tool name.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithStdio runs the server as a child process speaking MCP over its stdin
// and stdout. The process starts on first use and is stopped by Close; if
// it dies, the next request starts it again.
func WithStdio(command string, args ...string) Option {
	return func(c *config) {
		c.stdioSet = true
		c.command, c.args = command, append([]string(nil), args...)
	}
}

// WithEnv adds "KEY=value" entries to the environment of a stdio server.
// By default a server inherits only the variables named by InheritedEnv
// from lode's own environment, so an API key in it does not reach every
// server lode starts; WithParentEnv passes the whole environment instead.
func WithEnv(kv ...string) Option {
	return func(c *config) {
		for _, e := range kv {
			if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
				c.fail("WithEnv: %q is not KEY=value", e)
				continue
			}
			c.env = append(c.env, e)
		}
	}
}

// InheritedEnv names the variables of lode's own environment a stdio server
// is given by default: enough to find programs, a home and a locale, and
// nothing that usually holds a secret.
func InheritedEnv() []string {
	return []string{"HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER"}
}

// WithParentEnv gives a stdio server lode's whole environment, secrets
// included, for servers that need more than InheritedEnv.
func WithParentEnv() Option { return func(c *config) { c.parentEnv = true } }

// WithDir sets the working directory of a stdio server.
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithStderr sends a stdio server's stderr to w; by default it is
// discarded.
func WithStderr(w io.Writer) Option { return func(c *config) { c.stderr = w } }

// WithHTTP connects to a server over streamable HTTP at url (for example
// "http://127.0.0.1:8080/mcp").
func WithHTTP(url string) Option { return func(c *config) { c.url = url } }

// WithHeader adds a header to every HTTP request (an Authorization token,
// a tenant). It may be given several times.
func WithHeader(key, value string) Option {
	return func(c *config) {
		if c.header == nil {
			c.header = make(http.Header)
		}
		c.header.Add(key, value)
	}
}

// WithHTTPClient sets the HTTP client used with WithHTTP (TLS settings, a
// proxy, instrumentation). Headers from WithHeader are added on top of it.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithTransport connects with transports made by newTransport, one per
// connection: an in-memory pair, a custom transport. It is called again
// when the client reconnects.
func WithTransport(newTransport func(ctx context.Context) (sdk.Transport, error)) Option {
	return func(c *config) { c.transport = newTransport }
}

// WithInProcess connects to srv in this process over an in-memory
// transport: no process, no socket. Useful in tests and examples.
func WithInProcess(srv *Server) Option {
	return WithTransport(func(ctx context.Context) (sdk.Transport, error) {
		if srv == nil {
			return nil, errors.New("mcp: WithInProcess: nil server")
		}
		ct, st := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st); err != nil {
			return nil, err
		}
		return ct, nil
	})
}

// WithCallTimeout bounds each request to the server (tools/list,
// tools/call) once it is connected (WithConnectTimeout bounds connecting);
// zero means DefaultCallTimeout, and a negative duration no bound beyond
// the caller's context.
//
// A request that runs out of time — this bound, or the deadline of the
// caller's context — fails (with ErrTimeout, or the context's error), and
// the tool handler turns that into an error result. The server is asked
// to cancel the request (notifications/cancelled) and then pinged
// (WithPingTimeout): a slow tool on a server that still answers keeps
// its session. A server that does not answer the ping is hung, and would
// make the next request wait as long, so its session is dropped: it is
// closed as Close does it (a stdio server's stdin is closed, then it and
// its process group are killed if they do not exit in time), and the next
// request connects afresh. Other requests waiting on that session fail at
// once, with errors that wrap ErrTimeout. A caller that cancels its
// context (rather than letting a deadline pass) keeps the session without
// a ping.
func WithCallTimeout(d time.Duration) Option { return func(c *config) { c.callTimeout = d } }

// WithConnectTimeout bounds connecting to the server: starting a stdio
// server and the MCP handshake, or opening an HTTP session, and waiting
// for another request's connection attempt. Zero means
// DefaultConnectTimeout, and a negative duration no bound beyond the
// caller's context. A connection that runs out of time fails with an
// error wrapping ErrTimeout, and the next request tries again. A
// reconnection in the middle of a request (the server forgot the
// session) is bounded by both timeouts.
func WithConnectTimeout(d time.Duration) Option { return func(c *config) { c.connectTimeout = d } }

// WithStopTimeout sets how long Close waits for a stdio server to exit
// after its stdin is closed before it is signalled (default
// DefaultStopTimeout).
func WithStopTimeout(d time.Duration) Option { return func(c *config) { c.stopTimeout = d } }

// WithProtocolVersion asks for an MCP protocol version ("2025-11-25")
// instead of the newest the SDK speaks; the server may still negotiate
// another.
func WithProtocolVersion(v string) Option { return func(c *config) { c.protocolVersion = v } }

// WithReadOnly takes every tool of the server as read-only, and so not
// destructive, whatever its annotations say: for a server the application
// knows changes nothing. Without it MCP's defaults apply, and a tool that
// does not say it is read-only or non-destructive is taken as Destructive,
// which a Handler with an approver asks about on every call.
func WithReadOnly() Option { return func(c *config) { c.readOnly = true } }

// WithTrusted takes the tools called names, as the server names them, as
// not destructive, whatever their annotations say; see WithReadOnly. A
// name the server does not offer is not an error here (its list may
// change); an application that wants it checked compares Tools.
func WithTrusted(names ...string) Option {
	return func(c *config) { c.trusted = append(c.trusted, names...) }
}

// Labels are the application's word on the flow labels of a server's
// tools (tool.Hints' Untrusted, Private and SendsOut). The zero Labels is
// the default: the tools' output is untrusted (any server may pass on
// text written by others: a page, a mail, an issue), and holds nothing
// private, and calls send nothing out.
type Labels struct {
	// TrustOutput says that the tools' output carries no text from
	// outside parties: they are not hinted Untrusted.
	TrustOutput bool
	// Private says that the tools' output holds the user's private data.
	Private bool
	// SendsOut says that a call sends data out to someone other than the
	// user.
	SendsOut bool
}

// WithLabels sets the flow labels of the tools called names, as the
// server names them, or, with no names, of every tool the server offers
// that no named WithLabels covers. A later call for the same names wins.
// MCP has no annotation for them, so what the server says never counts.
func WithLabels(l Labels, names ...string) Option {
	return func(c *config) {
		if len(names) == 0 {
			c.labels = l
			return
		}
		if c.toolLabels == nil {
			c.toolLabels = make(map[string]Labels)
		}
		for _, n := range names {
			c.toolLabels[n] = l
		}
	}
}

// label sets t's flow hints from WithLabels.
func (c *config) label(t *tool.Tool) {
	l, ok := c.toolLabels[t.Name]
	if !ok {
		l = c.labels
	}
	t.Hints.Untrusted, t.Hints.Private, t.Hints.SendsOut = !l.TrustOutput, l.Private, l.SendsOut
}

// vouch puts the application's word on t (WithReadOnly, WithTrusted,
// WithLabels) over the server's, in its hints and in the annotations a
// Server passes on.
func (c *config) vouch(t *tool.Tool) error {
	c.label(t)
	if !c.readOnly && !slices.Contains(c.trusted, t.Name) {
		return nil
	}
	var a sdk.ToolAnnotations
	if len(t.Annotations) > 0 {
		if err := json.Unmarshal(t.Annotations, &a); err != nil {
			return fmt.Errorf("tool %q: annotations: %w", t.Name, err)
		}
	}
	a.DestructiveHint = ptr(false)
	t.Hints.Destructive = false
	if c.readOnly {
		a.ReadOnlyHint, t.Hints.ReadOnly = true, true
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("tool %q: annotations: %w", t.Name, err)
	}
	t.Annotations = raw
	return nil
}

// Client is an MCP server seen as a tool.RemoteSource: mount it with
// tool.WithMCPServer. It is safe for concurrent use.
//
// A Client connects lazily: NewClient only checks its options, and the
// first Tools or Call (or an explicit Connect) starts the process or opens
// the HTTP session, under that call's context. The tool list is cached
// until the server says it changed (notifications/tools/list_changed) or
// the client reconnects; then functions given to OnToolsChanged are
// called, so a registry re-lists the tools.
type Client struct {
	cfg config
	sdk *sdk.Client

	// connecting serialises connection attempts; a waiter can give up
	// with its context.
	connecting chan struct{}

	mu        sync.Mutex
	sess      *conn
	connected bool
	closed    bool
	tools     []tool.Tool
	toolsOK   bool
	toolsGen  uint64 // counts invalidations, so a stale listing is not cached
	listeners []func()
	refresher bool

	changed chan struct{}
	// life ends at Close; it cancels a connection attempt in flight.
	life context.Context
	kill context.CancelFunc
	wg   sync.WaitGroup
}

// conn is one live session. Its ctx ends when the session is dropped,
// and with it every request still waiting on the session.
type conn struct {
	cs  *sdk.ClientSession
	ctx context.Context
	end context.CancelCauseFunc
}

// hungError is why a session was dropped: a request on it ran out of time.
type hungError struct{ what, reason string }

func (e *hungError) Error() string { return e.what + " got " + e.reason }
func (e *hungError) Unwrap() error { return ErrTimeout }

var (
	_ tool.RemoteSource = (*Client)(nil)
	_ tool.Notifier     = (*Client)(nil)
)

// NewClient checks the options and returns a Client that connects on
// first use. WithName and exactly one of WithStdio, WithHTTP and
// WithTransport are required; every error wraps ErrOption.
func NewClient(opts ...Option) (*Client, error) {
	cfg := config{stopTimeout: DefaultStopTimeout}
	for _, o := range opts {
		if o == nil {
			cfg.fail("nil Option")
			continue
		}
		o(&cfg)
	}
	cfg.check()
	if len(cfg.errs) > 0 {
		return nil, errors.Join(cfg.errs...)
	}
	if cfg.callTimeout == 0 {
		cfg.callTimeout = DefaultCallTimeout
	}
	if cfg.connectTimeout == 0 {
		cfg.connectTimeout = DefaultConnectTimeout
	}
	c := &Client{
		cfg:        cfg,
		connecting: make(chan struct{}, 1),
		changed:    make(chan struct{}, 1),
	}
	c.life, c.kill = context.WithCancel(context.Background())
	// Advertise only what the client serves (the SDK's default offers roots).
	c.sdk = sdk.NewClient(&sdk.Implementation{Name: "lode", Version: Version}, c.sdkOptions())
	c.setup()
	return c, nil
}

func (c *config) check() {
	if c.name == "" {
		c.fail("WithName is required")
	} else if err := tool.ValidateName(c.name); err != nil {
		c.fail("WithName: %v", err)
	}
	n := 0
	if c.stdioSet {
		n++
		if strings.TrimSpace(c.command) == "" {
			c.fail("WithStdio: empty command")
		}
	}
	if c.url != "" {
		n++
		u, err := url.Parse(c.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.fail("WithHTTP: %q is not an absolute http(s) URL", c.url)
		}
	}
	if c.transport != nil {
		n++
	}
	switch {
	case n == 0:
		c.fail("no transport: give one of WithStdio, WithHTTP, WithTransport or WithInProcess")
	case n > 1:
		c.fail("more than one transport: give only one of WithStdio, WithHTTP, WithTransport or WithInProcess")
	}
	if !c.stdioSet && (len(c.env) > 0 || c.parentEnv || c.dir != "" || c.stderr != nil) {
		c.fail("WithEnv, WithParentEnv, WithDir and WithStderr apply only to WithStdio")
	}
	if c.url == "" && (c.header != nil || c.httpClient != nil) {
		c.fail("WithHeader and WithHTTPClient apply only to WithHTTP")
	}
	c.features.check(c)
	for _, n := range c.trusted {
		if n == "" {
			c.fail("WithTrusted: an empty tool name")
		}
	}
	if _, ok := c.toolLabels[""]; ok {
		c.fail("WithLabels: an empty tool name")
	}
	if c.stopTimeout <= 0 {
		c.fail("WithStopTimeout: %s is not positive", c.stopTimeout)
	}
}

// Name returns the server's name, as given to WithName.
func (c *Client) Name() string { return c.cfg.name }

// OnToolsChanged registers fn to be called, on a goroutine of the
// client's, each time the server's tool list may have changed. Calls are
// sequential, in registration order.
func (c *Client) OnToolsChanged(fn func()) {
	if fn == nil {
		return
	}
	c.mu.Lock()
	c.listeners = append(c.listeners, fn)
	c.mu.Unlock()
}

// Connect connects now rather than on first use: it starts the process or
// opens the HTTP session and completes the MCP handshake. It does nothing
// when already connected.
func (c *Client) Connect(ctx context.Context) error {
	_, err := c.session(ctx)
	return err
}

// Tools lists the server's tools, from the cache when it is current.
func (c *Client) Tools(ctx context.Context) ([]tool.Tool, error) {
	c.mu.Lock()
	if c.toolsOK && c.sess != nil {
		out := append([]tool.Tool(nil), c.tools...)
		c.mu.Unlock()
		return out, nil
	}
	c.mu.Unlock()
	sess, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	c.mu.Lock()
	gen := c.toolsGen
	c.mu.Unlock()
	var tools []tool.Tool
	params := &sdk.ListToolsParams{}
	for pages := 0; ; pages++ {
		if pages == 1000 {
			return nil, fmt.Errorf("mcp: server %q: tools/list did not end after %d pages", c.cfg.name, pages)
		}
		res, err := request(ctx, sess, func(ctx context.Context, cs *sdk.ClientSession) (*sdk.ListToolsResult, error) {
			return cs.ListTools(ctx, params)
		})
		if errors.Is(err, sdk.ErrSessionMissing) && pages == 0 {
			c.drop(sess, ErrConnectionLost)
			if sess, err = c.session(ctx); err != nil {
				return nil, err
			}
			res, err = request(ctx, sess, func(ctx context.Context, cs *sdk.ClientSession) (*sdk.ListToolsResult, error) {
				return cs.ListTools(ctx, params)
			})
		}
		if err != nil {
			return nil, c.requestError(ctx, sess, "tools/list", err)
		}
		for _, t := range res.Tools {
			lt, err := fromSDKTool(t)
			if err == nil {
				err = c.cfg.vouch(&lt)
			}
			if err != nil {
				return nil, fmt.Errorf("mcp: server %q: %w", c.cfg.name, err)
			}
			tools = append(tools, lt)
		}
		if res.NextCursor == "" {
			break
		}
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
	c.mu.Lock()
	if c.sess == sess && c.toolsGen == gen {
		c.tools, c.toolsOK = tools, true
	}
	c.mu.Unlock()
	return append([]tool.Tool(nil), tools...), nil
}

// Call runs the tool called name on the server. The result is a
// *tool.Result: Content holds the text the server returned, Parts its
// images, audio and binary resources (see the package doc), Value its
// structured content, and IsError the server's isError. A call the server
// could not take — it timed out, the connection broke, the server refused
// the request — is an error instead.
func (c *Client) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	sess, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	params := &sdk.CallToolParams{Name: name, Arguments: args}
	defer c.trackProgress(ctx, params)()
	if tm := traceMeta(ctx); tm != nil {
		if params.Meta == nil {
			params.Meta = sdk.Meta{}
		}
		for k, v := range tm {
			params.Meta[k] = v
		}
	}
	call := func(ctx context.Context, cs *sdk.ClientSession) (*sdk.CallToolResult, error) {
		return cs.CallTool(ctx, params)
	}
	res, err := request(ctx, sess, call)
	if errors.Is(err, sdk.ErrSessionMissing) {
		// The server forgot the session (it restarted) and so never ran
		// the call: start a new session and send it again.
		c.drop(sess, ErrConnectionLost)
		if sess, err = c.session(ctx); err != nil {
			return nil, err
		}
		res, err = request(ctx, sess, call)
	}
	if err != nil {
		return nil, c.requestError(ctx, sess, fmt.Sprintf("tools/call %q", name), err)
	}
	return toResult(res), nil
}

// Session returns the live go-sdk session, connecting if needed, for what
// this package does not wrap (prompts, resources, completion).
func (c *Client) Session(ctx context.Context) (*sdk.ClientSession, error) {
	sess, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	return sess.cs, nil
}

// request runs fn on sess, and ends it early if sess is dropped meanwhile.
func request[T any](ctx context.Context, sess *conn, fn func(context.Context, *sdk.ClientSession) (T, error)) (T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(sess.ctx, cancel)()
	return fn(ctx, sess.cs)
}

// Close ends the session and stops everything the client started: the
// server process (and any process it started), the HTTP session, the
// client's goroutines. It waits for them, and is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	sess := c.sess
	c.sess = nil
	c.mu.Unlock()
	c.kill()
	// Wait out a connection attempt in flight: cancelled, it closes what
	// it started.
	c.connecting <- struct{}{}
	<-c.connecting
	var err error
	if sess != nil {
		sess.end(ErrClosed)
		err = sess.cs.Close()
	}
	c.wg.Wait()
	if err != nil && !isExitNoise(err) {
		return fmt.Errorf("mcp: server %q: close: %w", c.cfg.name, err)
	}
	return nil
}

// withTimeout bounds one request by the call timeout, and ends it at
// Close: the SDK's session Close waits for calls in flight, so a call to
// a server that never answers must be cancelled first.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	var cancel context.CancelFunc
	if c.cfg.callTimeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, c.cfg.callTimeout, ErrTimeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	stop := context.AfterFunc(c.life, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// session returns the live session, connecting if there is none.
func (c *Client) session(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if s := c.sess; s != nil {
		c.mu.Unlock()
		return s, nil
	}
	c.mu.Unlock()

	if d := c.cfg.connectTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, &connectTimeoutError{limit: d})
		defer cancel()
	}
	select {
	case c.connecting <- struct{}{}:
	case <-ctx.Done():
		return nil, c.ctxError(ctx, "connect")
	case <-c.life.Done():
		return nil, ErrClosed
	}
	defer func() { <-c.connecting }()

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if s := c.sess; s != nil {
		c.mu.Unlock()
		return s, nil
	}
	reconnect := c.connected
	c.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.life, cancel)()
	t, stop, err := c.newTransport(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: %w", c.cfg.name, err)
	}
	var opts *sdk.ClientSessionOptions
	if c.cfg.protocolVersion != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: c.cfg.protocolVersion}
	}
	cs, err := c.sdk.Connect(ctx, withoutTaskTools(t), opts)
	if err != nil {
		stop()
		if c.life.Err() != nil {
			return nil, ErrClosed
		}
		if ctx.Err() != nil {
			return nil, c.ctxError(ctx, "connect")
		}
		return nil, fmt.Errorf("mcp: server %q: connect: %w", c.cfg.name, err)
	}

	sess := &conn{cs: cs}
	sess.ctx, sess.end = context.WithCancelCause(context.Background())
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		sess.end(ErrClosed)
		_ = cs.Close()
		stop()
		return nil, ErrClosed
	}
	c.sess, c.connected, c.toolsOK = sess, true, false
	c.toolsGen++
	c.wg.Add(1)
	go c.watch(sess, stop)
	if !c.refresher {
		c.refresher = true
		c.wg.Add(1)
		go c.refresh()
	}
	c.mu.Unlock()
	c.afterConnect(ctx, cs)
	if reconnect {
		// The new server may offer other tools than the old one.
		c.signal()
	}
	return sess, nil
}

// watch waits for a session to end, by Close or because the server went
// away, and cleans up after it.
func (c *Client) watch(sess *conn, stop func()) {
	defer c.wg.Done()
	_ = sess.cs.Wait()
	c.mu.Lock()
	if c.sess == sess {
		c.sess, c.toolsOK = nil, false
	}
	c.mu.Unlock()
	sess.end(ErrConnectionLost)
	_ = sess.cs.Close()
	stop()
}

// drop forgets a broken or hung session so that the next request
// reconnects, and ends the requests still waiting on it with cause.
func (c *Client) drop(sess *conn, cause error) {
	c.mu.Lock()
	current := c.sess == sess
	if current {
		c.sess, c.toolsOK = nil, false
	}
	c.mu.Unlock()
	sess.end(cause)
	if current {
		// Closing may wait for a process to exit; the watcher reaps it.
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			_ = sess.cs.Close()
		}()
	}
}

func (c *Client) onListChanged(context.Context, *sdk.ToolListChangedRequest) {
	c.mu.Lock()
	c.toolsOK = false
	c.toolsGen++
	c.mu.Unlock()
	c.signal()
}

func (c *Client) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// refresh calls the listeners for each change signal; coalescing signals
// that arrive while they run. Listeners run here, not in the SDK's
// notification handler, because they call back into the server.
func (c *Client) refresh() {
	defer c.wg.Done()
	for {
		select {
		case <-c.life.Done():
			return
		case <-c.changed:
		}
		c.mu.Lock()
		ls := append([]func(){}, c.listeners...)
		c.mu.Unlock()
		for _, fn := range ls {
			fn()
		}
	}
}

// connectTimeoutError is the cause of a connection attempt that ran out
// of its time (WithConnectTimeout).
type connectTimeoutError struct{ limit time.Duration }

func (e *connectTimeoutError) Error() string {
	return fmt.Sprintf("not connected within %s", e.limit)
}

func (e *connectTimeoutError) Unwrap() error { return ErrTimeout }

// codeRejected is the go-sdk's JSON-RPC code for a request its transport
// could not deliver (the HTTP server is down or answered 5xx).
const codeRejected = -32005

// requestError turns a failed request into an error a model can act on,
// and drops the session when the connection broke or the request ran out
// of time.
func (c *Client) requestError(ctx context.Context, sess *conn, what string, err error) error {
	if c.life.Err() != nil {
		return fmt.Errorf("mcp: server %q: %s: %w", c.cfg.name, what, ErrClosed)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason := "no answer before the caller's deadline"
		if errors.Is(context.Cause(ctx), ErrTimeout) {
			reason = fmt.Sprintf("no answer within %s", c.cfg.callTimeout)
		}
		if c.alive(sess) {
			return fmt.Errorf("mcp: server %q: %s: %s; the server still answers pings, so the session was kept: %w", c.cfg.name, what, reason, context.Cause(ctx))
		}
		c.drop(sess, &hungError{what: what, reason: reason})
		return fmt.Errorf("mcp: server %q: %s: %s; the session was dropped and the next call reconnects: %w", c.cfg.name, what, reason, context.Cause(ctx))
	}
	if ctx.Err() != nil {
		return c.ctxError(ctx, what)
	}
	var hung *hungError
	if errors.As(context.Cause(sess.ctx), &hung) {
		return fmt.Errorf("mcp: server %q: %s: abandoned, the session was dropped because %v; the next call reconnects: %w", c.cfg.name, what, hung, ErrTimeout)
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && rpc.Code != codeRejected {
		return fmt.Errorf("mcp: server %q refused %s: %s (JSON-RPC error %d): %w", c.cfg.name, what, rpc.Message, rpc.Code, err)
	}
	c.drop(sess, ErrConnectionLost)
	return fmt.Errorf("mcp: server %q: %s: %w (%w); it will be reconnected on the next call", c.cfg.name, what, ErrConnectionLost, err)
}

func (c *Client) ctxError(ctx context.Context, what string) error {
	var ct *connectTimeoutError
	if errors.As(context.Cause(ctx), &ct) {
		return fmt.Errorf("mcp: server %q: %s: %v (WithConnectTimeout): %w", c.cfg.name, what, ct, ErrTimeout)
	}
	if errors.Is(context.Cause(ctx), ErrTimeout) {
		return fmt.Errorf("mcp: server %q: %s: no answer within %s: %w", c.cfg.name, what, c.cfg.callTimeout, ErrTimeout)
	}
	return fmt.Errorf("mcp: server %q: %s: %w", c.cfg.name, what, context.Cause(ctx))
}

// newTransport makes the transport of one connection, and a function that
// cleans up what it started once the session is closed.
func (c *Client) newTransport(ctx context.Context) (sdk.Transport, func(), error) {
	switch {
	case c.cfg.transport != nil:
		t, err := c.cfg.transport(ctx)
		if err != nil {
			return nil, nil, err
		}
		if t == nil {
			return nil, nil, errors.New("WithTransport returned a nil transport")
		}
		return t, func() {}, nil
	case c.cfg.url != "":
		hc := c.cfg.httpClient
		if hc == nil {
			hc = http.DefaultClient
		}
		if c.cfg.header != nil {
			cp := *hc
			base := cp.Transport
			if base == nil {
				base = http.DefaultTransport
			}
			cp.Transport = &headerTransport{base: base, header: c.cfg.header}
			hc = &cp
		}
		hc = withoutTaskToolsHTTP(hc)
		return &sdk.StreamableClientTransport{Endpoint: c.cfg.url, HTTPClient: hc, OAuthHandler: c.cfg.features.oauth}, func() {}, nil
	default:
		cmd := exec.Command(c.cfg.command, c.cfg.args...)
		cmd.Dir = c.cfg.dir
		cmd.Env = append(c.cfg.baseEnv(), c.cfg.env...)
		cmd.Stderr = c.cfg.stderr
		ownGroup(cmd)
		t := &sdk.CommandTransport{Command: cmd, TerminateDuration: c.cfg.stopTimeout}
		return t, func() { killGroup(cmd) }, nil
	}
}

// baseEnv is the environment a stdio server starts from.
func (c *config) baseEnv() []string {
	if c.parentEnv {
		return os.Environ()
	}
	var env []string
	for _, k := range InheritedEnv() {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.header {
		r.Header[k] = append([]string(nil), vs...)
	}
	return t.base.RoundTrip(r)
}

// isExitNoise reports errors that only say a stdio server exited as it was
// asked to.
func isExitNoise(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) || errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF)
}
