package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/genaispan"
	"github.com/lodeworks/lode/x/provider/internal/idle"
	"github.com/lodeworks/lode/x/provider/internal/retry"
)

// Settings are what the options every adapter offers set. The zero value
// means every default.
type Settings struct {
	APIKey, Model, BaseURL string
	HTTPClient             *http.Client
	Headers                http.Header
	Tracer                 trace.Tracer
	// MaxRetries is nil when not set, since 0 turns retries off.
	MaxRetries           *int
	MaxRetryWait         time.Duration
	Timeout, IdleTimeout time.Duration
	NoStream             bool
	// Sleep and Now replace the wait between retries and the clock, for
	// tests; Getenv replaces os.Getenv (WithEnv).
	Sleep  func(ctx context.Context, d time.Duration) error
	Now    func() time.Time
	Getenv func(string) string
}

// AddHeader adds a header sent with every request (WithHeader).
func (s *Settings) AddHeader(name, value string) {
	if s.Headers == nil {
		s.Headers = make(http.Header)
	}
	s.Headers.Add(name, value)
}

// SetMaxRetries sets the retry count (WithMaxRetries); a negative n is 0.
func (s *Settings) SetMaxRetries(n int) {
	n = max(n, 0)
	s.MaxRetries = &n
}

// Endpoint is what an adapter's New checks the settings against.
type Endpoint struct {
	// Prefix starts error texts: the adapter's package name.
	Prefix string
	// EnvAPIKey and EnvBaseURL are read when the option is not given.
	EnvAPIKey, EnvBaseURL string
	// DefaultBaseURL is the API's own server.
	DefaultBaseURL string
	// ErrNoModel and ErrNoAPIKey are the adapter's sentinels for a missing
	// model, and a missing key for DefaultBaseURL.
	ErrNoModel, ErrNoAPIKey error
}

// Resolve fills the key and base URL from the environment where the
// options left them empty, and checks that a model is set, that a key is
// set for the default server (another server may need none), and that the
// base URL is an http(s) URL, which it returns parsed.
func (e Endpoint) Resolve(s *Settings) (*url.URL, error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if s.APIKey == "" {
		s.APIKey = getenv(e.EnvAPIKey)
	}
	if s.BaseURL == "" {
		s.BaseURL = getenv(e.EnvBaseURL)
	}
	explicitURL := s.BaseURL != ""
	if !explicitURL {
		s.BaseURL = e.DefaultBaseURL
	}
	if strings.TrimSpace(s.Model) == "" {
		return nil, e.ErrNoModel
	}
	if s.APIKey == "" && !explicitURL {
		return nil, e.ErrNoAPIKey
	}
	return ParseBaseURL(e.Prefix, s.BaseURL)
}

// ParseBaseURL parses raw, which must be an http(s) URL with a host; the
// error starts with prefix. An adapter whose New resolves the base URL
// itself checks it with this.
func ParseBaseURL(prefix, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q is not an http(s) URL", prefix, raw)
	}
	return u, nil
}

// Defaults are an adapter's values for what its options leave unset.
type Defaults struct {
	MaxRetries   int
	MaxRetryWait time.Duration
	IdleTimeout  time.Duration
}

// Conn is what an invocation needs of the settings, with every default
// applied.
type Conn struct {
	Model      string
	BaseURL    string // without a trailing slash
	HTTPClient *http.Client
	Headers    http.Header
	Tracer     trace.Tracer
	// ServerAddr and ServerPort are the span's server.address and
	// server.port.
	ServerAddr   string
	ServerPort   int
	MaxRetries   int
	MaxRetryWait time.Duration
	Timeout      time.Duration
	// IdleTimeout is negative when the limit is off.
	IdleTimeout time.Duration
	Stream      bool
	Sleep       func(ctx context.Context, d time.Duration) error
	Now         func() time.Time
}

// NewConn is s, resolved to u, with d for what s leaves unset.
func NewConn(s *Settings, u *url.URL, d Defaults) Conn {
	c := Conn{
		Model:        s.Model,
		BaseURL:      strings.TrimRight(s.BaseURL, "/"),
		HTTPClient:   s.HTTPClient,
		Headers:      s.Headers,
		Tracer:       s.Tracer,
		ServerAddr:   u.Hostname(),
		ServerPort:   genaispan.Port(u),
		MaxRetries:   d.MaxRetries,
		MaxRetryWait: s.MaxRetryWait,
		Timeout:      s.Timeout,
		IdleTimeout:  s.IdleTimeout,
		Stream:       !s.NoStream,
		Sleep:        s.Sleep,
		Now:          s.Now,
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: newTransport()}
	}
	if s.MaxRetries != nil {
		c.MaxRetries = *s.MaxRetries
	}
	if c.MaxRetryWait <= 0 {
		c.MaxRetryWait = d.MaxRetryWait
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.Sleep == nil {
		c.Sleep = retry.Sleep
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Plan is how the adapter's transport waits between attempts: backoff
// from base up to limit when the server names no wait.
func (c *Conn) Plan(base, limit time.Duration) retry.Plan {
	return retry.Plan{Base: base, Cap: limit, MaxWait: c.MaxRetryWait, Trace: c.Tracer != nil, Sleep: c.Sleep}
}

// ErrStopped marks a consumer that stopped iterating: nothing more may be
// yielded, and the invocation ends without an error.
var ErrStopped = errors.New("core: consumer stopped")

// Invocation is the frame of one call to a model.
type Invocation struct {
	// Provider is the span's gen_ai.provider.name.
	Provider string
	// ErrorType names a failure for the span, from the adapter's closed set.
	ErrorType func(error) string
}

// Yield is an adapter's consumer: artifacts, or one error that ends the
// sequence.
type Yield = func(artifact.Artifact, error) bool

// Run runs one invocation of req: it opens the "chat {model}" span when c
// has a tracer, calls run with yield, ends the span with what run learned
// (and, with content capture on in ctx, the whole artifacts run yielded),
// and hands run's error to yield unless the consumer stopped
// (ErrStopped).
func (inv Invocation) Run(ctx context.Context, c *Conn, req *provider.Request, yield Yield,
	run func(ctx context.Context, yield Yield) (*genaispan.Result, error)) {
	var sp trace.Span
	var out []artifact.Artifact
	if c.Tracer != nil {
		ctx, sp = genaispan.Start(ctx, c.Tracer, genaispan.Call{
			Provider: inv.Provider, Model: c.Model, ServerAddr: c.ServerAddr, ServerPort: c.ServerPort,
		}, req)
		if capture.From(ctx).On {
			inner := yield
			yield = func(a artifact.Artifact, err error) bool {
				if _, delta := a.(artifact.Delta); a != nil && !delta {
					out = append(out, a)
				}
				return inner(a, err)
			}
		}
	}
	res, err := run(ctx, yield)
	if err == ErrStopped {
		err = nil
	}
	if sp != nil {
		genaispan.End(ctx, sp, res, err, inv.ErrorType, out)
	}
	if err != nil {
		yield(nil, err)
	}
}

// Limits bounds ctx by the whole-call limit (timeout, when positive) and
// returns a guard that ends the call after idleTimeout of silence from the
// server (when positive; a nil guard does nothing). The errors are the
// adapter's: timeoutErr(false, timeout) for the whole call,
// timeoutErr(true, idleTimeout) for silence. stop releases both; the
// caller defers it.
func Limits(ctx context.Context, timeout, idleTimeout time.Duration, timeoutErr func(idle bool, limit time.Duration) error) (_ context.Context, g *idle.Guard, stop func()) {
	var stops []func()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, timeoutErr(false, timeout))
		stops = append(stops, cancel)
	}
	if idleTimeout > 0 {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		g = idle.NewGuard(idleTimeout, cancel, timeoutErr(true, idleTimeout))
		stops = append(stops, func() { cancel(nil) }, g.Disarm)
	}
	return ctx, g, func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
}

// IdleConnsPerHost is how many idle connections to the model's server the
// HTTP client made when none is given keeps for reuse. net/http's default
// keeps 2, so a server running many turns at once would dial a new
// connection for most model calls and close it after.
const IdleConnsPerHost = 256

// newTransport is net/http's default transport, keeping IdleConnsPerHost
// idle connections per host.
func newTransport() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = IdleConnsPerHost
	t.MaxIdleConns = max(t.MaxIdleConns, IdleConnsPerHost)
	return t
}
