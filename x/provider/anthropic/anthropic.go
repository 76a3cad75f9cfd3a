package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"

	"github.com/lodeworks/lode/x/provider/internal/core"
	"github.com/lodeworks/lode/x/provider/internal/genaispan"
)

// Environment variables New reads when the matching option is not given.
const (
	EnvAPIKey  = "ANTHROPIC_API_KEY"
	EnvBaseURL = "ANTHROPIC_BASE_URL"
)

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is what max_tokens is when Request.MaxTokens is 0: the
// Messages API requires the field. With thinking on, the thinking budget
// is added to it, since the budget counts against max_tokens.
const DefaultMaxTokens = 8192

// Retry defaults, as in the openai adapter: two retries starting at half a
// second; a wait the server asks for above DefaultMaxRetryWait is not taken.
const (
	DefaultMaxRetries   = 2
	DefaultMaxRetryWait = time.Minute
)

// DefaultIdleTimeout is the longest the server may stay silent while
// streaming: before the response headers and between any two reads of the
// body. The API sends ping events while a model thinks, which reset it.
const DefaultIdleTimeout = 2 * time.Minute

// MinThinkingBudget is the smallest thinking budget the API takes.
const MinThinkingBudget = 1024

const (
	retryBase = 500 * time.Millisecond
	retryCap  = 8 * time.Second
)

// Construction errors, wrapped by New.
var (
	// ErrOption: an option was given a value it does not take.
	ErrOption   = errors.New("anthropic: invalid option")
	ErrNoModel  = errors.New("anthropic: no model: use WithModel")
	ErrNoAPIKey = errors.New("anthropic: no API key: use WithAPIKey or set " + EnvAPIKey + " (a server given with WithBaseURL may need none)")
)

var _ provider.Provider = (*Provider)(nil)

// Provider invokes a Claude model through the Messages API. It is safe for
// concurrent use.
type Provider struct {
	core       core.Conn
	apiKey     string
	thinking   int
	cache      CacheMode
	cacheTTL   time.Duration
	structured *bool
}

type settings struct {
	core.Settings
	thinking   int
	cache      CacheMode
	cacheTTL   time.Duration
	structured *bool
}

// Option configures a Provider.
type Option func(*settings)

// WithAPIKey sets the API key, sent the way the SDK sends it; empty means
// ANTHROPIC_API_KEY.
func WithAPIKey(key string) Option { return func(s *settings) { s.APIKey = key } }

// WithModel sets the model every invocation asks for, such as
// "claude-sonnet-4-5". It is required.
func WithModel(model string) Option { return func(s *settings) { s.Model = model } }

// WithBaseURL points the provider at another server speaking the Messages
// API (a gateway, a proxy); empty means ANTHROPIC_BASE_URL, then
// DefaultBaseURL. With a base URL set, an API key is optional.
func WithBaseURL(u string) Option { return func(s *settings) { s.BaseURL = u } }

// WithEnv sets how New reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL; nil
// means os.Getenv. A program that takes the key from a variable of its own
// choosing passes a lookup that answers "" for ANTHROPIC_API_KEY, so that a
// key meant for Anthropic is not sent to another server.
func WithEnv(getenv func(string) string) Option { return func(s *settings) { s.Getenv = getenv } }

// WithHTTPClient sets the HTTP client; nil means a new http.Client that
// keeps up to 256 idle connections to the server for reuse (net/http's
// default keeps 2, too few for many turns at once).
func WithHTTPClient(c *http.Client) Option { return func(s *settings) { s.HTTPClient = c } }

// WithHeader adds a header to every request, such as an anthropic-beta
// feature ("context-1m-2025-08-07" for the 1M-token context window).
func WithHeader(name, value string) Option { return func(s *settings) { s.AddHeader(name, value) } }

// WithMaxRetries sets how many times a 429, 5xx or 529 (overloaded) answer
// is retried before the error is returned; 0 disables retries, a negative
// value is 0. The default is DefaultMaxRetries. A stream that fails after it
// has begun is not retried: its deltas are already yielded.
func WithMaxRetries(n int) Option { return func(s *settings) { s.SetMaxRetries(n) } }

// WithMaxRetryWait caps the wait a server may ask for (retry-after): a
// longer wait returns the *APIError at once, its RetryAfter saying how long.
// Zero or negative means DefaultMaxRetryWait.
func WithMaxRetryWait(d time.Duration) Option { return func(s *settings) { s.MaxRetryWait = d } }

// WithTimeout bounds one whole invocation, retries and streamed body
// included; zero or negative means no limit of the provider's own. When it
// ends an invocation the error matches ErrTimeout.
func WithTimeout(d time.Duration) Option { return func(s *settings) { s.Timeout = d } }

// WithIdleTimeout bounds how long a streaming server may send nothing:
// the wait for the response headers and every gap between two reads of the
// body. Zero means DefaultIdleTimeout; negative turns the limit off. When it
// ends an invocation the error is a *TimeoutError matching ErrIdleTimeout
// and ErrTimeout. Without streaming only WithTimeout bounds the wait.
func WithIdleTimeout(d time.Duration) Option { return func(s *settings) { s.IdleTimeout = d } }

// WithTracer records a "chat {model}" span per invocation, after the
// OpenTelemetry GenAI conventions. Without one, tracing costs nothing.
func WithTracer(t trace.Tracer) Option { return func(s *settings) { s.Tracer = t } }

// WithStreaming chooses between a streamed answer (the default) and one
// whole response. Without streaming no deltas are yielded.
func WithStreaming(on bool) Option { return func(s *settings) { s.NoStream = !on } }

// WithThinkingBudget turns extended thinking on for every invocation with a
// budget of tokens (at least MinThinkingBudget); 0 leaves it off, and
// WithThinking overrides it per invocation. A negative or too small budget
// fails New with ErrOption.
func WithThinkingBudget(tokens int) Option { return func(s *settings) { s.thinking = tokens } }

// CacheMode says where prompt-cache breakpoints go.
type CacheMode string

const (
	// CacheAuto (the zero value) marks the tools, the system prompt, the
	// newest message and the user message before it: four breakpoints, the
	// API's maximum, so that each turn reads what the previous one wrote.
	CacheAuto CacheMode = ""
	// CacheStable marks only the tools and the system prompt, for threads
	// whose history changes between requests (compaction, edits).
	CacheStable CacheMode = "stable"
	// CacheOff sends no breakpoints.
	CacheOff CacheMode = "off"
)

// WithCache chooses where cache breakpoints go; see CacheAuto for the
// default. Any other value fails New with ErrOption.
func WithCache(m CacheMode) Option { return func(s *settings) { s.cache = m } }

// WithCacheTTL sets how long a cache entry lives: 0 means the API's default
// of five minutes, time.Hour asks for the one-hour cache (billed higher).
// Any other value fails New with ErrOption.
func WithCacheTTL(d time.Duration) Option { return func(s *settings) { s.cacheTTL = d } }

// withSleep replaces the wait between retries, for tests.
func withSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(s *settings) { s.Sleep = f }
}

// WithClock sets the clock a request judges a kept container's expiry by
// (and a date-valued retry header's wait); nil means time.Now. A recorded
// session (x/cassette) replayed after its container expired needs the
// recording's time here, which the cassette's Recorder.Clock gives (lode
// run --replay and x/eval's Anthropic use it): otherwise its requests
// name no container and no longer match the recording.
func WithClock(now func() time.Time) Option { return func(s *settings) { s.Now = now } }

var endpoint = core.Endpoint{
	Prefix: "anthropic", EnvAPIKey: EnvAPIKey, EnvBaseURL: EnvBaseURL, DefaultBaseURL: DefaultBaseURL,
	ErrNoModel: ErrNoModel, ErrNoAPIKey: ErrNoAPIKey,
}

// New returns a Provider. It fails when no model is set, when no API key is
// set for the default base URL, when the base URL is not an http(s) URL, or
// when an option has a value it does not take (all such problems at once).
func New(opts ...Option) (*Provider, error) {
	var s settings
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	u, err := endpoint.Resolve(&s.Settings)
	if err != nil {
		return nil, err
	}
	var bad []error
	if s.thinking != 0 && s.thinking < MinThinkingBudget {
		bad = append(bad, fmt.Errorf("%w: WithThinkingBudget(%d): a budget is at least %d tokens, or 0 for no thinking", ErrOption, s.thinking, MinThinkingBudget))
	}
	switch s.cache {
	case CacheAuto, CacheStable, CacheOff:
	default:
		bad = append(bad, fmt.Errorf("%w: WithCache(%q): use CacheAuto, CacheStable or CacheOff", ErrOption, string(s.cache)))
	}
	if s.cacheTTL != 0 && s.cacheTTL != 5*time.Minute && s.cacheTTL != time.Hour {
		bad = append(bad, fmt.Errorf("%w: WithCacheTTL(%s): the API keeps entries 5m or 1h", ErrOption, s.cacheTTL))
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	p := &Provider{
		core: core.NewConn(&s.Settings, u, core.Defaults{
			MaxRetries: DefaultMaxRetries, MaxRetryWait: DefaultMaxRetryWait, IdleTimeout: DefaultIdleTimeout,
		}),
		apiKey:     s.APIKey,
		thinking:   s.thinking,
		cache:      s.cache,
		cacheTTL:   s.cacheTTL,
		structured: s.structured,
	}
	return p, nil
}

// Model returns the model the provider asks for.
func (p *Provider) Model() string { return p.core.Model }

// BaseURL returns the server the provider talks to.
func (p *Provider) BaseURL() string { return p.core.BaseURL }

// ContextWindow is the model's context window in tokens, for history
// policies; see the package function ContextWindow.
func (p *Provider) ContextWindow() (int, bool) { return ContextWindow(p.core.Model) }

// Invoke sends req and streams the answer; see the package documentation
// for what is yielded. The sequence ends with the first error.
func (p *Provider) Invoke(ctx context.Context, req *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		if req == nil {
			req = &provider.Request{}
		}
		invocation.Run(ctx, &p.core, req, yield,
			func(ctx context.Context, yield core.Yield) (*result, error) { return p.invoke(ctx, req, yield) })
	}
}

var invocation = core.Invocation{Provider: "anthropic", ErrorType: errorType}

// errStopped marks a consumer that stopped iterating.
var errStopped = core.ErrStopped

// result is what an invocation learned, for the span.
type result = genaispan.Result

func (p *Provider) invoke(ctx context.Context, req *provider.Request, yield func(artifact.Artifact, error) bool) (*result, error) {
	res := &result{CacheTokens: true}
	params, extra, err := p.buildParams(req)
	if err != nil {
		return res, err
	}
	if ctx.Err() != nil {
		return res, ctxError(ctx)
	}
	idleTimeout := p.core.IdleTimeout
	if !p.core.Stream {
		idleTimeout = 0
	}
	ctx, guard, stop := core.Limits(ctx, p.core.Timeout, idleTimeout, timeoutError)
	defer stop()
	ct := &callTransport{p: p, extra: extra, idle: guard}
	opts := []option.RequestOption{
		// New has read the environment, through WithEnv's lookup.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(p.core.BaseURL + "/"),
		option.WithHTTPClient(ct),
		option.WithMaxRetries(0), // callTransport retries, honouring the server's waits
		// The "chat {model}" span is WithTracer's; the SDK would otherwise
		// add spans of its own through the global provider.
		option.WithOpenTelemetryTraces(false),
	}
	if p.apiKey != "" {
		opts = append(opts, option.WithAPIKey(p.apiKey))
	}
	for k, vs := range p.core.Headers {
		for _, v := range vs {
			opts = append(opts, option.WithHeaderAdd(k, v))
		}
	}
	client := sdk.NewClient(opts...)
	if p.core.Stream {
		return res, p.runStream(ctx, &client, ct, params, res, yield)
	}
	return res, p.runWhole(ctx, &client, ct, params, res, yield)
}
