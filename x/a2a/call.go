package a2a

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/lodeworks/lode/tool"
)

// Errors of the calling half; match them with errors.Is.
var (
	// ErrCard is wrapped when the agent card cannot be used: not found,
	// too large, not JSON, the wrong shape, too many skills, skills
	// without names or with names that clash, no endpoint lode speaks.
	ErrCard = errors.New("a2a: unusable agent card")
)

// Defaults of a Remote's bounds.
const (
	// DefaultTimeout bounds one remote task unless WithTimeout says
	// otherwise.
	DefaultTimeout = 5 * time.Minute
	// DefaultMaxResult bounds the text of one answer, in bytes, unless
	// WithMaxResult says otherwise; what is past it is cut, with a marker.
	DefaultMaxResult = 64 << 10
	// DefaultMaxResponse bounds what one HTTP response of the remote
	// agent may carry (a whole answer, or a whole event stream).
	DefaultMaxResponse = 16 << 20
	// MaxCard bounds the agent card, in bytes.
	MaxCard = 1 << 20
	// MaxSkills bounds how many skills a card may list; each is a tool.
	MaxSkills = 64
	// maxDescription bounds a skill's description as the model sees it.
	maxDescription = 2000
)

// Labels are the application's word on the flow labels of a remote
// agent's tools (tool.Hints' Untrusted, Private and SendsOut). The zero
// Labels is the default: the answer is untrusted (a remote agent passes on
// text written by others), holds nothing private, and a call is not
// counted as sending data out.
type Labels struct {
	// TrustOutput says the agent's answers carry no text from outside
	// parties: its tools are not hinted Untrusted.
	TrustOutput bool
	// Private says the answers hold the user's private data.
	Private bool
	// SendsOut says a call sends data to someone other than the user.
	SendsOut bool
}

// RemoteOption configures a Remote.
type RemoteOption func(*remoteConfig)

type remoteConfig struct {
	name       string
	httpClient *http.Client
	header     http.Header
	timeout    time.Duration
	maxResult  int
	labels     Labels
	readOnly   bool
	errs       []error
}

func (c *remoteConfig) fail(format string, a ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: "+format, append([]any{ErrOption}, a...)...))
}

// WithName names the source: its tools are "<name>__<skill>". Empty means
// a name made from the card's (lower case, characters a tool name cannot
// hold replaced by '_').
func WithName(name string) RemoteOption { return func(c *remoteConfig) { c.name = name } }

// WithHTTPClient sends the card request and every call through hc (a
// cassette's recorder, a proxy, TLS settings); nil means
// http.DefaultTransport. Its Timeout, if any, bounds each request besides
// WithTimeout.
func WithHTTPClient(hc *http.Client) RemoteOption { return func(c *remoteConfig) { c.httpClient = hc } }

// WithBearerToken sends "Authorization: Bearer token" with each request
// to the origin (scheme, host and port) of the URL given to NewRemote, and
// to no other, whatever the card says; empty sends none.
func WithBearerToken(token string) RemoteOption {
	return func(c *remoteConfig) {
		if token == "" {
			return
		}
		if strings.ContainsAny(token, "\r\n") {
			c.fail("WithBearerToken: the token holds a line break")
			return
		}
		c.setHeader("Authorization", "Bearer "+token)
	}
}

// WithHeader sends the header key: value with each request to the card's
// origin only, as WithBearerToken.
func WithHeader(key, value string) RemoteOption {
	return func(c *remoteConfig) {
		if key == "" || strings.ContainsAny(key, " \t\r\n:") || strings.ContainsAny(value, "\r\n") {
			c.fail("WithHeader(%q): not a valid header", key)
			return
		}
		c.setHeader(key, value)
	}
}

func (c *remoteConfig) setHeader(k, v string) {
	if c.header == nil {
		c.header = http.Header{}
	}
	c.header.Set(k, v)
}

// WithTimeout bounds one remote task, from the request to its answer;
// d <= 0 means DefaultTimeout. When it passes, the task is cancelled at
// the remote agent and the call is an error result.
func WithTimeout(d time.Duration) RemoteOption { return func(c *remoteConfig) { c.timeout = d } }

// WithMaxResult bounds the text of one answer the model sees, in bytes;
// n <= 0 means DefaultMaxResult.
func WithMaxResult(n int) RemoteOption { return func(c *remoteConfig) { c.maxResult = n } }

// WithLabels sets the flow labels of every tool of the agent; see Labels.
func WithLabels(l Labels) RemoteOption { return func(c *remoteConfig) { c.labels = l } }

// WithReadOnly takes the agent's skills as changing nothing. Without it
// every skill is hinted Destructive (a remote agent may do anything its
// tools do), which a Handler with an approver asks about on every call.
func WithReadOnly() RemoteOption { return func(c *remoteConfig) { c.readOnly = true } }

// Remote is a remote A2A agent as a tool.RemoteSource: each skill of its
// card is a tool, and a call is a remote task.
type Remote struct {
	cfg     remoteConfig
	name    string
	base    *url.URL
	card    *a2a.AgentCard
	client  *a2aclient.Client
	tools   []tool.Tool
	skills  map[string]a2a.AgentSkill // tool's own name -> skill
	stream  bool
	msgSeq  atomic.Uint64
	transpt *transport
}

// NewRemote fetches the agent card at rawURL (the agent's base URL, where
// CardPath is looked for, or the card's own URL ending in .json), checks
// it, and returns the agent as a tool source. The card may be in A2A 1.0's
// form or 0.3's; the agent may speak JSON-RPC or HTTP+JSON, in either
// version.
func NewRemote(ctx context.Context, rawURL string, opts ...RemoteOption) (*Remote, error) {
	var cfg remoteConfig
	for _, o := range opts {
		o(&cfg)
	}
	base, err := url.Parse(rawURL)
	switch {
	case err != nil:
		cfg.fail("url %q: %v", rawURL, err)
	case base.Scheme != "http" && base.Scheme != "https":
		cfg.fail("url %q: the scheme must be http or https", rawURL)
	case base.Host == "":
		cfg.fail("url %q: no host", rawURL)
	case base.User != nil:
		cfg.fail("url %q: credentials go in WithBearerToken or WithHeader, not in the URL", redactURL(base))
	}
	if cfg.name != "" {
		if err := tool.ValidateName(cfg.name); err != nil {
			cfg.fail("WithName: %v", err)
		}
	}
	if len(cfg.errs) > 0 {
		return nil, errors.Join(cfg.errs...)
	}
	if cfg.timeout <= 0 {
		cfg.timeout = DefaultTimeout
	}
	if cfg.maxResult <= 0 {
		cfg.maxResult = DefaultMaxResult
	}
	r := &Remote{cfg: cfg, base: base}
	r.transpt = newTransport(cfg.httpClient, base, cfg.header)
	hc := &http.Client{Transport: r.transpt}
	if cfg.httpClient != nil {
		hc.Timeout = cfg.httpClient.Timeout
		hc.CheckRedirect = cfg.httpClient.CheckRedirect
		hc.Jar = cfg.httpClient.Jar
	}
	card, err := fetchCard(ctx, hc, base)
	if err != nil {
		return nil, err
	}
	r.card = card
	r.name = cfg.name
	if r.name == "" {
		r.name = nameOf(card.Name)
	}
	if err := r.readSkills(); err != nil {
		return nil, err
	}
	r.stream = card.Capabilities.Streaming
	client, err := a2aclient.NewFromCard(ctx, card,
		a2aclient.WithJSONRPCTransport(hc),
		a2aclient.WithRESTTransport(hc),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}),
		a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: hc}),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCard, redactURL(base), err)
	}
	r.client = client
	return r, nil
}

// Mount fetches the card at rawURL and mounts the agent's skills in reg
// as tools named "<name>__<skill>". The Remote is returned for Close.
func Mount(ctx context.Context, reg tool.Registry, rawURL string, opts ...RemoteOption) (*Remote, error) {
	r, err := NewRemote(ctx, rawURL, opts...)
	if err != nil {
		return nil, err
	}
	if err := reg.Mount(ctx, r); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// Name is the source's name, the prefix of its tools.
func (r *Remote) Name() string { return r.name }

// Card returns the agent card the Remote was made from; do not modify it.
func (r *Remote) Card() *a2a.AgentCard { return r.card }

// Tools lists a tool per skill of the card. It asks nothing of the remote
// agent: the card was read by NewRemote.
func (r *Remote) Tools(context.Context) ([]tool.Tool, error) {
	return append([]tool.Tool(nil), r.tools...), nil
}

// Close releases the client's connections.
func (r *Remote) Close() error {
	if r.client == nil {
		return nil
	}
	return r.client.Destroy()
}

// nameOf makes a source name from an agent's name.
func nameOf(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.Join(strings.Fields(s), "_")
	if s == "" {
		return "a2a"
	}
	n := tool.SafeName(s)
	if len(n) > 32 {
		n = n[:32]
	}
	return n
}

// redactURL is u as it may be shown: without a password or a query.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.Fragment = ""
	return c.String()
}
