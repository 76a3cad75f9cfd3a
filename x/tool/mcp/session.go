package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// request runs fn on sess, and ends it early if sess is dropped meanwhile.
func request[T any](ctx context.Context, sess *conn, fn func(context.Context, *sdk.ClientSession) (T, error)) (T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(sess.ctx, cancel)()
	return fn(ctx, sess.cs)
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
