package responses

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"

	"github.com/lodeworks/lode/x/provider/internal/core"
	"github.com/lodeworks/lode/x/provider/internal/genaispan"
)

// Environment variables New reads when the matching option is not given:
// the same as the chat-completions adapter's.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// DefaultBaseURL is the OpenAI API; requests go to its /responses.
const DefaultBaseURL = "https://api.openai.com/v1"

// Retry defaults, as in the other adapters: two retries starting at half a
// second; a wait the server asks for above DefaultMaxRetryWait is not taken.
const (
	DefaultMaxRetries   = 2
	DefaultMaxRetryWait = time.Minute
)

// DefaultIdleTimeout is the longest the server may stay silent while
// streaming: before the response headers and between any two reads of the
// body. A reasoning model may think for minutes before its first summary.
const DefaultIdleTimeout = 2 * time.Minute

const (
	// streamEmptyLimit is how many lines that are not data (event: names,
	// blank lines, keep-alive comments) go-openai tolerates between two
	// data lines. Its default of 300 fails a server that pings while a
	// model thinks.
	streamEmptyLimit = 10000
)

// Construction errors, wrapped by New.
var (
	// ErrOption: an option was given a value it does not take.
	ErrOption   = errors.New("responses: invalid option")
	ErrNoModel  = errors.New("responses: no model: use WithModel")
	ErrNoAPIKey = errors.New("responses: no API key: use WithAPIKey or set " + EnvAPIKey + " (a server given with WithBaseURL may need none)")
)

var (
	_ provider.Provider                = (*Provider)(nil)
	_ provider.ResponseFormatSupporter = (*Provider)(nil)
)

// Provider invokes a model through the Responses API. It is safe for
// concurrent use.
type Provider struct {
	core    core.Conn
	cfg     goopenai.ClientConfig
	chain   bool
	strict  bool
	effort  string
	summary string
	maxLine int
	search  *bool // WithToolSearch; nil decides by the model's name
}

type settings struct {
	core.Settings
	org             string
	chain           bool
	noStrict        bool
	effort, summary string
	maxLine         int
	search          *bool
}

// Option configures a Provider.
type Option func(*settings)

// WithAPIKey sets the bearer token; empty means OPENAI_API_KEY.
func WithAPIKey(key string) Option { return func(s *settings) { s.APIKey = key } }

// WithModel sets the model every invocation asks for, such as "gpt-5". It
// is required.
func WithModel(model string) Option { return func(s *settings) { s.Model = model } }

// WithBaseURL points the provider at another server speaking the Responses
// API (Azure OpenAI's /openai/v1, a gateway, a test server); empty means
// OPENAI_BASE_URL, then DefaultBaseURL. With a base URL set, an API key is
// optional.
func WithBaseURL(u string) Option { return func(s *settings) { s.BaseURL = u } }

// WithEnv sets how New reads OPENAI_API_KEY and OPENAI_BASE_URL; nil means
// os.Getenv.
func WithEnv(getenv func(string) string) Option { return func(s *settings) { s.Getenv = getenv } }

// WithHTTPClient sets the HTTP client; nil means a new http.Client that
// keeps up to 256 idle connections to the server for reuse (net/http's
// default keeps 2, too few for many turns at once).
func WithHTTPClient(c *http.Client) Option { return func(s *settings) { s.HTTPClient = c } }

// WithOrganization sends the OpenAI-Organization header.
func WithOrganization(org string) Option { return func(s *settings) { s.org = org } }

// WithHeader adds a header to every request.
func WithHeader(name, value string) Option { return func(s *settings) { s.AddHeader(name, value) } }

// WithMaxRetries sets how many times a 429 or 5xx answer is retried before
// the error is returned; 0 disables retries, a negative value is 0. The
// default is DefaultMaxRetries. A stream that fails after it has begun is
// not retried: its deltas are already yielded.
func WithMaxRetries(n int) Option { return func(s *settings) { s.SetMaxRetries(n) } }

// WithMaxRetryWait caps the wait a server may ask for: a longer wait
// returns the *APIError at once, its RetryAfter saying how long. Zero or
// negative means DefaultMaxRetryWait.
func WithMaxRetryWait(d time.Duration) Option { return func(s *settings) { s.MaxRetryWait = d } }

// WithTimeout bounds one whole invocation, retries and streamed body
// included; zero or negative means no limit of the provider's own. When it
// ends an invocation the error matches ErrTimeout.
func WithTimeout(d time.Duration) Option { return func(s *settings) { s.Timeout = d } }

// WithIdleTimeout bounds how long a streaming server may send nothing. Zero
// means DefaultIdleTimeout; negative turns the limit off. When it ends an
// invocation the error is a *TimeoutError matching ErrIdleTimeout and
// ErrTimeout. Without streaming only WithTimeout bounds the wait.
func WithIdleTimeout(d time.Duration) Option { return func(s *settings) { s.IdleTimeout = d } }

// WithTracer records a "chat {model}" span per invocation, after the
// OpenTelemetry GenAI conventions. Without one, tracing costs nothing.
func WithTracer(t trace.Tracer) Option { return func(s *settings) { s.Tracer = t } }

// WithStreaming chooses between a streamed answer (the default) and one
// whole response. Without streaming no deltas are yielded.
func WithStreaming(on bool) Option { return func(s *settings) { s.NoStream = !on } }

// WithPreviousResponse turns server-side chaining on: responses are stored
// (store: true), each answer keeps its response ID in the ledger, and a
// request sends previous_response_id with only the turns after the answer
// it names. It is off by default: the whole history goes every time, from
// the ledger, with store: false, so that a thread moves between servers,
// survives an expired stored response and replays from any store.
func WithPreviousResponse(on bool) Option { return func(s *settings) { s.chain = on } }

// WithStrictTools says whether a tool (and a json_schema response format)
// whose schema passes openai.CheckStrict is sent with strict: true (the
// default). Other schemas always go with strict: false, which the Responses
// API would otherwise assume true.
func WithStrictTools(on bool) Option { return func(s *settings) { s.noStrict = !on } }

// WithReasoningEffort sends reasoning.effort ("minimal", "low", "medium",
// "high", ...) on every request; empty sends none. WithEffort overrides it
// per invocation.
func WithReasoningEffort(effort string) Option { return func(s *settings) { s.effort = effort } }

// WithReasoningSummary asks for reasoning summaries ("auto", "concise" or
// "detailed"), which stream as ReasoningDelta and land in Reasoning.Content;
// empty asks for none. Models without reasoning refuse it.
func WithReasoningSummary(summary string) Option { return func(s *settings) { s.summary = summary } }

// WithToolSearch says whether tools marked tool.Tool.Deferred (which
// x/tool/toolsearch's Native sets) go with defer_loading beside the hosted
// tool_search tool (true), or as ordinary functions (false). Without it,
// SupportsToolSearch decides by the model's name; a deployment name it
// cannot read (Azure's) needs WithToolSearch(true).
func WithToolSearch(on bool) Option { return func(s *settings) { s.search = &on } }

// withSleep replaces the wait between retries, for tests.
func withSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(s *settings) { s.Sleep = f }
}

// withMaxLine replaces DefaultMaxLine, for tests.
func withMaxLine(n int) Option { return func(s *settings) { s.maxLine = n } }

// withClock replaces the clock that reads date-valued retry headers.
func withClock(now func() time.Time) Option { return func(s *settings) { s.Now = now } }

var endpoint = core.Endpoint{
	Prefix: "responses", EnvAPIKey: EnvAPIKey, EnvBaseURL: EnvBaseURL, DefaultBaseURL: DefaultBaseURL,
	ErrNoModel: ErrNoModel, ErrNoAPIKey: ErrNoAPIKey,
}

// New returns a Provider. It fails when no model is set, when no API key is
// set for the default base URL, when the base URL is not an http(s) URL, or
// when an option has a value it does not take.
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
	switch s.summary {
	case "", "auto", "concise", "detailed":
	default:
		bad = append(bad, fmt.Errorf("%w: WithReasoningSummary(%q): use auto, concise or detailed", ErrOption, s.summary))
	}
	if strings.TrimSpace(s.effort) != s.effort {
		bad = append(bad, fmt.Errorf("%w: WithReasoningEffort(%q): an effort is one word", ErrOption, s.effort))
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	p := &Provider{
		core: core.NewConn(&s.Settings, u, core.Defaults{
			MaxRetries: DefaultMaxRetries, MaxRetryWait: DefaultMaxRetryWait, IdleTimeout: DefaultIdleTimeout,
		}),
		chain:   s.chain,
		strict:  !s.noStrict,
		effort:  s.effort,
		summary: s.summary,
		maxLine: s.maxLine,
		search:  s.search,
	}
	if p.maxLine <= 0 {
		p.maxLine = DefaultMaxLine
	}
	p.cfg = goopenai.DefaultConfig(s.APIKey)
	p.cfg.BaseURL = p.core.BaseURL
	p.cfg.OrgID = s.org
	p.cfg.EmptyMessagesLimit = streamEmptyLimit
	return p, nil
}

// Model returns the model the provider asks for.
func (p *Provider) Model() string { return p.core.Model }

// BaseURL returns the server the provider talks to.
func (p *Provider) BaseURL() string { return p.core.BaseURL }

// SupportsResponseFormat reports true for both formats: the Responses API
// takes text.format json_schema and json_object on every model that has
// structured outputs.
func (p *Provider) SupportsResponseFormat(typ string) bool {
	return typ == provider.ResponseFormatJSONSchema || typ == provider.ResponseFormatJSONObject
}

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

var invocation = core.Invocation{Provider: "openai", ErrorType: errorType}

// errStopped marks a consumer that stopped iterating.
var errStopped = core.ErrStopped

// result is what an invocation learned, for the span.
type result = genaispan.Result

func (p *Provider) invoke(ctx context.Context, req *provider.Request, yield func(artifact.Artifact, error) bool) (*result, error) {
	res := &result{}
	rreq, err := p.buildRequest(req)
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
	ct := &callTransport{p: p, stream: p.core.Stream, idle: guard}
	cfg := p.cfg
	cfg.HTTPClient = ct
	client := goopenai.NewClientWithConfig(cfg)
	if p.core.Stream {
		return res, p.runStream(ctx, client, ct, rreq, res, yield)
	}
	return res, p.runWhole(ctx, client, ct, rreq, res, yield)
}
