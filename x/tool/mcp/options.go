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
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/tool"
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
