package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lodeworks/lode/ledger"
)

// Defaults of the session options.
const (
	// DefaultSessionTTL is how long a session lasts when WithSessionTTL
	// is not given.
	DefaultSessionTTL = 12 * time.Hour
	// CookieName is the session cookie's name.
	CookieName = "lode_session"
	// RevokedCounterPrefix starts the name of the counter that marks a
	// session logged out: the prefix and the session's ID.
	RevokedCounterPrefix = "lode.session.revoked:"
)

// ErrSessionEnded is what Sessions.Authenticate returns for a cookie that
// was good once: its session expired or was logged out. The error returned
// matches ErrUnauthenticated too.
var ErrSessionEnded = errors.New("auth: the session has ended: log in again")

// ended is the error of an ended session: ErrSessionEnded, which is also
// ErrUnauthenticated.
type ended struct{}

func (ended) Error() string { return ErrSessionEnded.Error() }

func (ended) Is(target error) bool { return target == ErrSessionEnded || target == ErrUnauthenticated }

// SessionOption configures Sessions.
type SessionOption func(*sessionConfig)

type sessionConfig struct {
	ttl     time.Duration
	counter ledger.Counter
	key     []byte
	secure  bool
	now     func() time.Time
	errs    []error
}

// WithSessionTTL sets how long a session lasts from its login. 0 means
// DefaultSessionTTL; a negative d is an error.
func WithSessionTTL(d time.Duration) SessionOption {
	return func(c *sessionConfig) {
		if d < 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: WithSessionTTL(%s): want 0 (default) or more", ErrOption, d))
		}
		c.ttl = d
	}
}

// WithRevocations keeps logouts in c's shared counters (one named
// RevokedCounterPrefix + the session's ID each), so that a cookie replayed
// after its logout fails on every process and replica sharing the store.
// Nil (the default) keeps them in this process only.
func WithRevocations(c ledger.Counter) SessionOption {
	return func(sc *sessionConfig) { sc.counter = c }
}

// WithSessionKey mixes key into the key that signs every session. Without
// it each token's sessions are signed with a key derived from the token
// alone, which every replica given the token derives alike; with it,
// changing key ends every session at once. An empty key is an error.
func WithSessionKey(key []byte) SessionOption {
	return func(c *sessionConfig) {
		if len(key) == 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: WithSessionKey: the key is empty", ErrOption))
		}
		c.key = append([]byte(nil), key...)
	}
}

// WithSecureCookie marks the cookie Secure on every login, for a server
// behind a proxy that ends TLS: without it the cookie is Secure only when
// the login came over TLS itself.
func WithSecureCookie() SessionOption { return func(c *sessionConfig) { c.secure = true } }

// WithSessionClock sets the clock sessions are issued and expire by; nil
// means time.Now. For tests.
func WithSessionClock(now func() time.Time) SessionOption {
	return func(c *sessionConfig) { c.now = now }
}

// Sessions trade a valid token for a session cookie, as a browser's login
// page does, and authenticate requests by that cookie. The cookie is
// HttpOnly, SameSite=Strict, Path=/, Secure over TLS (or always, with
// WithSecureCookie), and expires; it holds a random session ID and its
// expiry, signed with HMAC-SHA256 under a key derived from the token it
// was traded for. So a forged or altered cookie fails, and so does one
// whose token is no longer among the Tokens; a logged-out one fails where
// its revocation is kept (WithRevocations). A Sessions is safe for
// concurrent use.
type Sessions struct {
	tokens *Tokens
	cfg    sessionConfig

	mu      sync.Mutex
	revoked map[string]int64 // session ID → expiry (Unix seconds), logged out here
}

// NewSessions returns Sessions for the holders of tokens. Every option is
// checked; the problems are returned together, each wrapping ErrOption.
func NewSessions(tokens *Tokens, opts ...SessionOption) (*Sessions, error) {
	var c sessionConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	errs := c.errs
	if tokens == nil {
		errs = append(errs, fmt.Errorf("%w: NewSessions: no Tokens to log in with", ErrOption))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if c.ttl == 0 {
		c.ttl = DefaultSessionTTL
	}
	if c.now == nil {
		c.now = time.Now
	}
	return &Sessions{tokens: tokens, cfg: c, revoked: map[string]int64{}}, nil
}

// TTL is how long a session lasts.
func (s *Sessions) TTL() time.Duration { return s.cfg.ttl }

// Login sets a session cookie on w for the holder of secret and returns
// its Identity; an unknown secret sets nothing and returns
// ErrUnauthenticated. The secret is compared in constant time and never
// stored: the cookie holds only the session's ID and expiry.
func (s *Sessions) Login(w http.ResponseWriter, r *http.Request, secret string) (Identity, error) {
	e := s.tokens.find(sha256.Sum256([]byte(secret)))
	if e == nil {
		return Identity{}, ErrUnauthenticated
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Identity{}, fmt.Errorf("auth: make a session ID: %w", err)
	}
	sid := hex.EncodeToString(raw[:])
	exp := s.cfg.now().Add(s.cfg.ttl)
	body := "v1." + sid + "." + strconv.FormatInt(exp.Unix(), 10)
	http.SetCookie(w, &http.Cookie{
		Name:     CookieName,
		Value:    body + "." + s.sign(e, body),
		Path:     "/",
		Expires:  exp,
		MaxAge:   int(s.cfg.ttl / time.Second),
		HttpOnly: true,
		Secure:   s.secure(r),
		SameSite: http.SameSiteStrictMode,
	})
	return e.id.clone(), nil
}

// Logout ends the session of r's cookie, when it has a valid one, so that
// the cookie fails from now on (on every replica, with WithRevocations),
// and clears the cookie on w. A request without a valid cookie only has
// the cookie cleared.
func (s *Sessions) Logout(w http.ResponseWriter, r *http.Request) error {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure(r), SameSite: http.SameSiteStrictMode})
	sid, exp, _, err := s.verify(r)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	now := s.cfg.now().Unix()
	if len(s.revoked) >= 1024 {
		for k, e := range s.revoked {
			if e < now {
				delete(s.revoked, k)
			}
		}
	}
	s.revoked[sid] = exp
	s.mu.Unlock()
	if s.cfg.counter != nil {
		ctx := context.WithoutCancel(r.Context())
		if _, _, err := s.cfg.counter.AddCounter(ctx, RevokedCounterPrefix+sid, 1, ledger.NoLimit); err != nil {
			return fmt.Errorf("auth: log out: keep the revocation: %w", err)
		}
	}
	return nil
}

// Authenticate returns the Identity of r's session cookie: that of its
// token as the Tokens grant it now. No cookie, or a forged one, is
// ErrUnauthenticated, and so is one whose token is no longer configured
// (its key is gone); an expired or logged-out one is ErrSessionEnded. A
// failure to read the revocations is returned as it is: the request is not
// authenticated either way.
func (s *Sessions) Authenticate(r *http.Request) (Identity, error) {
	sid, _, e, err := s.verify(r)
	if err != nil {
		return Identity{}, err
	}
	s.mu.Lock()
	_, gone := s.revoked[sid]
	s.mu.Unlock()
	if gone {
		return Identity{}, ended{}
	}
	if s.cfg.counter != nil {
		n, _, err := s.cfg.counter.AddCounter(r.Context(), RevokedCounterPrefix+sid, 0, ledger.NoLimit)
		if err != nil {
			return Identity{}, fmt.Errorf("auth: read the session's revocation: %w", err)
		}
		if n > 0 {
			return Identity{}, ended{}
		}
	}
	return e.id.clone(), nil
}

// verify checks r's cookie: its form, its signature under one of the
// tokens' keys (every token is tried, in constant time each), and its
// expiry.
func (s *Sessions) verify(r *http.Request) (sid string, exp int64, e *tokenEntry, err error) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return "", 0, nil, ErrUnauthenticated
	}
	body, mac, ok := cutLast(c.Value, ".")
	if !ok {
		return "", 0, nil, ErrUnauthenticated
	}
	parts := strings.Split(body, ".")
	if len(parts) != 3 || parts[0] != "v1" || len(parts[1]) != 32 {
		return "", 0, nil, ErrUnauthenticated
	}
	if _, err := hex.DecodeString(parts[1]); err != nil {
		return "", 0, nil, ErrUnauthenticated
	}
	exp, err = strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return "", 0, nil, ErrUnauthenticated
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil {
		return "", 0, nil, ErrUnauthenticated
	}
	signed := false
	for i := range s.tokens.entries {
		want := s.mac(&s.tokens.entries[i], body)
		if subtle.ConstantTimeCompare(got, want) == 1 {
			e, signed = &s.tokens.entries[i], true
		}
	}
	if !signed {
		// A cookie signed by a token no longer configured reads like a
		// forged one: the key it was signed with is gone.
		return "", 0, nil, ErrUnauthenticated
	}
	if s.cfg.now().Unix() >= exp {
		return "", 0, nil, ended{}
	}
	return parts[1], exp, e, nil
}

func (s *Sessions) mac(e *tokenEntry, body string) []byte {
	key := e.key[:]
	if s.cfg.key != nil {
		m := hmac.New(sha256.New, s.cfg.key)
		m.Write(key)
		key = m.Sum(nil)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

func (s *Sessions) sign(e *tokenEntry, body string) string {
	return base64.RawURLEncoding.EncodeToString(s.mac(e, body))
}

func (s *Sessions) secure(r *http.Request) bool { return s.cfg.secure || r.TLS != nil }

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
