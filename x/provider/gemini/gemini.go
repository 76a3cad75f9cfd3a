package gemini

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/httptransport"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genai"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"

	"github.com/lodeworks/lode/x/provider/internal/core"
	"github.com/lodeworks/lode/x/provider/internal/genaispan"
)

// Environment variables New reads when the matching option is not given.
// They are the SDK's own names; GOOGLE_API_KEY wins over GEMINI_API_KEY, as
// in the SDK.
const (
	EnvAPIKey       = "GEMINI_API_KEY"
	EnvGoogleAPIKey = "GOOGLE_API_KEY"
	EnvBaseURL      = "GOOGLE_GEMINI_BASE_URL"
	EnvVertexURL    = "GOOGLE_VERTEX_BASE_URL"
	EnvUseVertex    = "GOOGLE_GENAI_USE_VERTEXAI"
	EnvProject      = "GOOGLE_CLOUD_PROJECT"
	EnvLocation     = "GOOGLE_CLOUD_LOCATION"
	EnvRegion       = "GOOGLE_CLOUD_REGION" // read when GOOGLE_CLOUD_LOCATION is unset
)

// DefaultBaseURL is the Gemini API.
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// Retry defaults, as in the other adapters: two retries starting at half a
// second; a wait the server asks for above DefaultMaxRetryWait is not taken.
const (
	DefaultMaxRetries   = 2
	DefaultMaxRetryWait = time.Minute
)

// DefaultIdleTimeout is the longest the server may stay silent while
// streaming: before the response headers and between two reads of the
// body. A model that thinks long sends nothing meanwhile, so it is
// generous.
const DefaultIdleTimeout = 3 * time.Minute

const (
	retryBase = 500 * time.Millisecond
	retryCap  = 8 * time.Second
)

// Backend says which Google service serves the model.
type Backend string

const (
	// BackendGeminiAPI (the zero value, unless GOOGLE_GENAI_USE_VERTEXAI
	// is "true" or "1") is the Gemini Developer API, with an API key.
	BackendGeminiAPI Backend = "gemini"
	// BackendVertexAI is Vertex AI: a project and a location with Google
	// credentials, or an API key in express mode.
	BackendVertexAI Backend = "vertex"
)

// Construction errors, wrapped by New.
var (
	// ErrOption: an option was given a value it does not take.
	ErrOption   = errors.New("gemini: invalid option")
	ErrNoModel  = errors.New("gemini: no model: use WithModel")
	ErrNoAPIKey = errors.New("gemini: no API key: use WithAPIKey or set " + EnvAPIKey + " (or " + EnvGoogleAPIKey + ")")
	// ErrNoVertexAuth: Vertex AI needs a project and a location (with
	// credentials) or an API key.
	ErrNoVertexAuth = errors.New("gemini: Vertex AI needs WithProject and WithLocation (or " + EnvProject + " and " + EnvLocation + "), or an API key")
)

var _ provider.Provider = (*Provider)(nil)

// Provider invokes a Gemini model through the official SDK. It is safe for
// concurrent use.
type Provider struct {
	core       core.Conn
	invocation core.Invocation
	backend    Backend
	apiKey     string
	client     *genai.Client
	thinking   *genai.ThinkingConfig
	newID      func() string
	maxEvent   int
}

type settings struct {
	core.Settings
	backend           Backend
	apiVersion        string
	project, location string
	creds             *auth.Credentials
	budget            *int
	level             string
	thoughts          bool
	newID             func() string
	maxEvent          int
}

// Option configures a Provider.
type Option func(*settings)

// WithAPIKey sets the API key; empty means GOOGLE_API_KEY, then
// GEMINI_API_KEY. The Gemini API needs one; Vertex AI takes one in express
// mode, without a project or location.
func WithAPIKey(key string) Option { return func(s *settings) { s.APIKey = key } }

// WithModel sets the model every invocation asks for, such as
// "gemini-2.5-flash". It is required.
func WithModel(model string) Option { return func(s *settings) { s.Model = model } }

// WithBaseURL points the provider at another server speaking the API (a
// gateway, a proxy, a test server); empty means GOOGLE_GEMINI_BASE_URL (or
// GOOGLE_VERTEX_BASE_URL for Vertex AI), then Google's own.
func WithBaseURL(u string) Option { return func(s *settings) { s.BaseURL = u } }

// WithBackend chooses the Gemini API or Vertex AI; empty means
// GOOGLE_GENAI_USE_VERTEXAI, then BackendGeminiAPI.
func WithBackend(b Backend) Option { return func(s *settings) { s.backend = b } }

// WithProject sets the Google Cloud project for Vertex AI; empty means
// GOOGLE_CLOUD_PROJECT.
func WithProject(id string) Option { return func(s *settings) { s.project = id } }

// WithLocation sets the Vertex AI location ("us-central1", "global");
// empty means GOOGLE_CLOUD_LOCATION, then GOOGLE_CLOUD_REGION, then
// "global".
func WithLocation(loc string) Option { return func(s *settings) { s.location = loc } }

// WithCredentials sets the Google credentials Vertex AI requests are
// authorised with; nil means Application Default Credentials, looked up by
// New when Vertex AI is used with a project and no API key.
func WithCredentials(c *auth.Credentials) Option { return func(s *settings) { s.creds = c } }

// WithEnv sets how New reads its environment variables; nil means
// os.Getenv. The SDK is given every value explicitly, and these win over
// what it reads of the environment itself.
func WithEnv(getenv func(string) string) Option { return func(s *settings) { s.Getenv = getenv } }

// WithHTTPClient sets the HTTP client; nil means a new http.Client that
// keeps up to 256 idle connections to the server for reuse (net/http's
// default keeps 2, too few for many turns at once).
func WithHTTPClient(c *http.Client) Option { return func(s *settings) { s.HTTPClient = c } }

// WithAPIVersion sets the API version in the URL; empty means the SDK's
// default, "v1beta" for the Gemini API and "v1beta1" for Vertex AI.
func WithAPIVersion(v string) Option { return func(s *settings) { s.apiVersion = v } }

// WithHeader adds a header to every request.
func WithHeader(name, value string) Option { return func(s *settings) { s.AddHeader(name, value) } }

// WithMaxRetries sets how many times a 429 or 5xx answer is retried before
// the error is returned; 0 disables retries, a negative value is 0. The
// default is DefaultMaxRetries. A stream that fails after it has begun is
// not retried: its deltas are already yielded.
func WithMaxRetries(n int) Option { return func(s *settings) { s.SetMaxRetries(n) } }

// WithMaxRetryWait caps the wait a server may ask for (Retry-After, or the
// RetryInfo of Google's error): a longer wait returns the *APIError at
// once, its RetryAfter saying how long. Zero or negative means
// DefaultMaxRetryWait.
func WithMaxRetryWait(d time.Duration) Option { return func(s *settings) { s.MaxRetryWait = d } }

// WithTimeout bounds one whole invocation, retries and streamed body
// included; zero or negative means no limit of the provider's own. When it
// ends an invocation the error matches ErrTimeout.
func WithTimeout(d time.Duration) Option { return func(s *settings) { s.Timeout = d } }

// WithIdleTimeout bounds how long a streaming server may send nothing.
// Zero means DefaultIdleTimeout; negative turns the limit off. When it ends
// an invocation the error is a *TimeoutError matching ErrIdleTimeout and
// ErrTimeout. Without streaming only WithTimeout bounds the wait.
func WithIdleTimeout(d time.Duration) Option { return func(s *settings) { s.IdleTimeout = d } }

// WithTracer records a "chat {model}" span per invocation, after the
// OpenTelemetry GenAI conventions. Without one, tracing costs nothing.
func WithTracer(t trace.Tracer) Option { return func(s *settings) { s.Tracer = t } }

// WithStreaming chooses between a streamed answer (the default,
// streamGenerateContent) and one whole response (generateContent). Without
// streaming no deltas are yielded.
func WithStreaming(on bool) Option { return func(s *settings) { s.NoStream = !on } }

// WithThinkingBudget sets thinkingConfig.thinkingBudget: tokens the model
// may think, 0 to turn thinking off where the model allows, -1 to let the
// model decide. Without it (or WithThinkingLevel) no thinkingConfig is
// sent and the model's default holds.
func WithThinkingBudget(tokens int) Option { return func(s *settings) { s.budget = &tokens } }

// WithThinkingLevel sets thinkingConfig.thinkingLevel for models that take
// a level instead of a budget (Gemini 3): "low", "medium", "high" or
// "minimal".
func WithThinkingLevel(level string) Option { return func(s *settings) { s.level = level } }

// WithThoughts asks for thought summaries (includeThoughts), which arrive
// as Reasoning. Thought signatures come, and go back, either way.
func WithThoughts(on bool) Option { return func(s *settings) { s.thoughts = on } }

// withSleep replaces the wait between retries, for tests.
func withSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(s *settings) { s.Sleep = f }
}

// withClock replaces the clock that reads date-valued retry headers.
func withClock(now func() time.Time) Option { return func(s *settings) { s.Now = now } }

// withMaxEvent lowers MaxEventSize, for tests.
func withMaxEvent(n int) Option { return func(s *settings) { s.maxEvent = n } }

// withIDs replaces the maker of IDs for calls the server sent without one.
func withIDs(f func() string) Option { return func(s *settings) { s.newID = f } }

// New returns a Provider. It fails when no model is set, when the backend
// lacks what it authenticates with, when the base URL is not an http(s) URL,
// or when an option has a value it does not take.
func New(opts ...Option) (*Provider, error) {
	var s settings
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.TrimSpace(s.Model) == "" {
		return nil, ErrNoModel
	}
	if s.backend == "" {
		s.backend = BackendGeminiAPI
		if v := strings.ToLower(getenv(EnvUseVertex)); v == "true" || v == "1" {
			s.backend = BackendVertexAI
		}
	}
	if s.APIKey == "" {
		s.APIKey = getenv(EnvGoogleAPIKey)
	}
	if s.APIKey == "" {
		s.APIKey = getenv(EnvAPIKey)
	}
	var bad []error
	if s.level != "" {
		switch strings.ToLower(s.level) {
		case "minimal", "low", "medium", "high":
		default:
			bad = append(bad, fmt.Errorf("%w: WithThinkingLevel(%q): use minimal, low, medium or high", ErrOption, s.level))
		}
	}
	if s.budget != nil && *s.budget < -1 {
		bad = append(bad, fmt.Errorf("%w: WithThinkingBudget(%d): a budget is -1 (dynamic), 0 (off) or a count of tokens", ErrOption, *s.budget))
	}
	cc := genai.ClientConfig{HTTPOptions: genai.HTTPOptions{Headers: s.Headers.Clone(), APIVersion: s.apiVersion}}
	switch s.backend {
	case BackendGeminiAPI:
		if s.BaseURL == "" {
			s.BaseURL = getenv(EnvBaseURL)
		}
		if s.BaseURL == "" {
			s.BaseURL = DefaultBaseURL
		}
		if s.APIKey == "" {
			return nil, ErrNoAPIKey
		}
		cc.Backend = genai.BackendGeminiAPI
		cc.APIKey = s.APIKey
	case BackendVertexAI:
		if s.project == "" {
			s.project = getenv(EnvProject)
		}
		if s.location == "" {
			s.location = getenv(EnvLocation)
		}
		if s.location == "" {
			s.location = getenv(EnvRegion)
		}
		explicitKey := s.APIKey != ""
		if s.project != "" && s.location == "" {
			s.location = "global" // as the SDK defaults it
		}
		if s.project != "" {
			// A project means Google credentials; a key found in the
			// environment is not sent along with them.
			s.APIKey = ""
		}
		if s.BaseURL == "" {
			s.BaseURL = getenv(EnvVertexURL)
		}
		if s.APIKey == "" && (s.project == "" || s.location == "") {
			if explicitKey {
				return nil, fmt.Errorf("%w: an API key (express mode) goes without a project", ErrNoVertexAuth)
			}
			return nil, ErrNoVertexAuth
		}
		if s.BaseURL == "" {
			s.BaseURL = vertexURL(s.location, s.APIKey != "")
		}
		cc.Backend = genai.BackendVertexAI
		cc.APIKey = s.APIKey
		if s.APIKey == "" {
			cc.Project, cc.Location = s.project, s.location
		}
	default:
		return nil, fmt.Errorf("%w: WithBackend(%q): use BackendGeminiAPI or BackendVertexAI", ErrOption, string(s.backend))
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	u, err := core.ParseBaseURL("gemini", s.BaseURL)
	if err != nil {
		return nil, err
	}
	s.Model = strings.TrimPrefix(s.Model, "models/")
	p := &Provider{
		core: core.NewConn(&s.Settings, u, core.Defaults{
			MaxRetries: DefaultMaxRetries, MaxRetryWait: DefaultMaxRetryWait, IdleTimeout: DefaultIdleTimeout,
		}),
		invocation: core.Invocation{Provider: providerName(s.backend), ErrorType: errorType},
		backend:    s.backend,
		apiKey:     s.APIKey,
		newID:      s.newID,
		maxEvent:   s.maxEvent,
	}
	if s.budget != nil || s.level != "" || s.thoughts {
		p.thinking = &genai.ThinkingConfig{IncludeThoughts: s.thoughts, ThinkingLevel: genai.ThinkingLevel(strings.ToUpper(s.level))}
		if s.budget != nil {
			b := int32(*s.budget)
			p.thinking.ThinkingBudget = &b
		}
	}
	if p.newID == nil {
		p.newID = callIDs()
	}
	// The SDK's client sends through callTransport, which retries and
	// hands the answer to this package (see transport.go).
	sdkHTTP := &http.Client{Transport: roundTripper{p}}
	if cc.Backend == genai.BackendVertexAI && cc.APIKey == "" {
		creds := s.creds
		if creds == nil {
			creds, err = credentials.DetectDefault(&credentials.DetectOptions{
				Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"},
			})
			if err != nil {
				return nil, fmt.Errorf("gemini: Vertex AI without an API key needs Google credentials (WithCredentials, or Application Default Credentials): %w", err)
			}
		}
		if err := httptransport.AddAuthorizationMiddleware(sdkHTTP, creds); err != nil {
			return nil, fmt.Errorf("gemini: Vertex AI credentials: %w", err)
		}
	}
	cc.HTTPClient = sdkHTTP
	cc.HTTPOptions.BaseURL = p.core.BaseURL + "/"
	client, err := genai.NewClient(context.Background(), &cc)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	p.client = client
	return p, nil
}

// vertexURL is Vertex AI's endpoint for a location, as the SDK picks it.
func vertexURL(location string, express bool) string {
	switch {
	case express || location == "global" || location == "":
		return "https://aiplatform.googleapis.com"
	case location == "us" || location == "eu":
		return "https://aiplatform." + location + ".rep.googleapis.com"
	}
	return "https://" + location + "-aiplatform.googleapis.com"
}

// Model returns the model the provider asks for.
func (p *Provider) Model() string { return p.core.Model }

// BaseURL returns the server the provider talks to.
func (p *Provider) BaseURL() string { return p.core.BaseURL }

// Backend returns the service the provider talks to.
func (p *Provider) Backend() Backend { return p.backend }

// ContextWindow is the model's context window in tokens, for history
// policies; see the package function ContextWindow.
func (p *Provider) ContextWindow() (int, bool) { return ContextWindow(p.core.Model) }

// SupportsResponseFormat reports true for both JSON types: the API takes
// responseMimeType application/json, with a schema (responseJsonSchema) or
// without.
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
		p.invocation.Run(ctx, &p.core, req, yield,
			func(ctx context.Context, yield core.Yield) (*result, error) {
				res := &result{CacheTokens: true}
				return res, p.invoke(ctx, req, res, yield)
			})
	}
}

// providerName is gen_ai.provider.name after the GenAI conventions.
func providerName(b Backend) string {
	if b == BackendVertexAI {
		return "gcp.vertex_ai"
	}
	return "gcp.gemini"
}

// errStopped marks a consumer that stopped iterating.
var errStopped = core.ErrStopped

// result is what an invocation learned, for the span.
type result = genaispan.Result

func (p *Provider) invoke(ctx context.Context, req *provider.Request, res *result, yield func(artifact.Artifact, error) bool) error {
	contents, cfg, fixes, err := p.build(req)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	idleTimeout := p.core.IdleTimeout
	if !p.core.Stream {
		idleTimeout = 0
	}
	ctx, guard, stop := core.Limits(ctx, p.core.Timeout, idleTimeout, timeoutError)
	defer stop()
	ct := &callTransport{p: p, fixes: fixes, idle: guard}
	resp, err := ct.send(withCall(ctx, ct), p.client, p.core.Model, contents, cfg, p.core.Stream)
	if err != nil {
		return p.callError(ctx, ct, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return p.refusal(ctx, ct, resp)
	}
	asm := assembler{newID: p.newID, maxEvent: p.maxEvent}
	defer asm.report(res)
	if p.core.Stream {
		err = asm.readStream(resp.Body, yield)
	} else {
		err = asm.readWhole(resp.Body, yield)
	}
	if err != nil && err != errStopped && ctx.Err() != nil {
		return ctxError(ctx)
	}
	var ae *APIError
	if errors.As(err, &ae) {
		ae.Attempts, ae.Hint = ct.outcome.Attempts, p.hint(ae)
	}
	return err
}
