package web

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/auth"
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
