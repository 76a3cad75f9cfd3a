package mcp

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
