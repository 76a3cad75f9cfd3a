package openai

import (
	"context"
	"encoding/json"
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

// Environment variables New reads when the matching option is not given.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// DefaultBaseURL is the OpenAI API.
const DefaultBaseURL = "https://api.openai.com/v1"

// Retry defaults: like OpenAI's own SDKs, two retries starting at half a
// second; a Retry-After longer than DefaultMaxRetryWait is not waited for.
const (
	DefaultMaxRetries   = 2
	DefaultMaxRetryWait = time.Minute
)

// DefaultIdleTimeout is the longest the server may stay silent: before the
// first byte of a stream and between any two reads of a response body.
// Some reasoning models think for minutes without streaming anything, so it
// is generous; servers that ping while they think (keep-alive comments)
// reset it with every ping.
const DefaultIdleTimeout = 2 * time.Minute

const (
	// streamEmptyLimit is how many non-data lines (keep-alive comments,
	// blank lines) go-openai tolerates between two events. Its default of
	// 300 fails streams from servers that ping while a model thinks.
	streamEmptyLimit = 10000
)

// Construction errors, wrapped by New.
var (
	// ErrOption: an option was given a value it does not take.
	ErrOption   = errors.New("openai: invalid option")
	ErrNoModel  = errors.New("openai: no model: use WithModel")
	ErrNoAPIKey = errors.New("openai: no API key: use WithAPIKey or set " + EnvAPIKey + " (a server given with WithBaseURL may need none)")
)

var (
	_ provider.Provider                = (*Provider)(nil)
	_ provider.ResponseFormatSupporter = (*Provider)(nil)
)

// Provider invokes a chat-completions model. It is safe for concurrent use.
type Provider struct {
	core           core.Conn
	modelHead      []byte // `{"model":"name"`, how a request body begins
	cfg            goopenai.ClientConfig
	maxTokensField MaxTokensField
	effortField    EffortField
	bodyFields     []member
	sendReason     bool
	strict         bool
	jsonSchema     bool
}

type settings struct {
	core.Settings
	org            string
	maxTokensField MaxTokensField
	effortField    EffortField
	bodyFields     []bodyField
	noReason       bool
	noStrict       bool
	jsonSchema     *bool
}

// Option configures a Provider.
type Option func(*settings)

// WithAPIKey sets the bearer token; empty means OPENAI_API_KEY.
func WithAPIKey(key string) Option { return func(s *settings) { s.APIKey = key } }

// WithModel sets the model every invocation asks for. It is required.
func WithModel(model string) Option { return func(s *settings) { s.Model = model } }

// WithBaseURL points the provider at another server, e.g.
// "http://127.0.0.1:11434/v1" for Ollama; empty means OPENAI_BASE_URL, then
// DefaultBaseURL. With a base URL set, an API key is optional.
func WithBaseURL(u string) Option { return func(s *settings) { s.BaseURL = u } }

// WithEnv sets how New reads OPENAI_API_KEY and OPENAI_BASE_URL; nil
// means os.Getenv. A program that takes the key from a variable of its own
// choosing passes a lookup that answers "" for OPENAI_API_KEY, so that a key
// meant for OpenAI is not sent to another server.
func WithEnv(getenv func(string) string) Option { return func(s *settings) { s.Getenv = getenv } }

// WithHTTPClient sets the HTTP client; nil means a new http.Client that
// keeps up to 256 idle connections to the server for reuse (net/http's
// default keeps 2, too few for many turns at once).
func WithHTTPClient(c *http.Client) Option { return func(s *settings) { s.HTTPClient = c } }

// WithOrganization sends the OpenAI-Organization header.
func WithOrganization(org string) Option { return func(s *settings) { s.org = org } }

// WithHeader adds a header to every request (a project ID, a gateway's
// routing key, ...).
func WithHeader(name, value string) Option { return func(s *settings) { s.AddHeader(name, value) } }

// WithMaxRetries sets how many times a 429 or 5xx answer is retried before
// the error is returned; 0 disables retries. The default is
// DefaultMaxRetries. A request that cannot reach the server, and a stream
// that fails after it has begun (its deltas are already yielded), are not
// retried.
func WithMaxRetries(n int) Option { return func(s *settings) { s.SetMaxRetries(n) } }

// WithMaxRetryWait caps the Retry-After a server may ask for: a longer wait
// returns the *APIError at once (its RetryAfter says how long). Zero means
// DefaultMaxRetryWait.
func WithMaxRetryWait(d time.Duration) Option { return func(s *settings) { s.MaxRetryWait = d } }

// WithTimeout bounds one whole invocation: every attempt, the waits between
// retries and the whole streamed body. Zero or negative means no limit of
// the provider's own (the default), since an agent's answer may rightly take
// long and the caller's context already bounds it; WithIdleTimeout catches a
// server that stalls. When it ends an invocation, the error is a
// *TimeoutError matching ErrTimeout.
func WithTimeout(d time.Duration) Option { return func(s *settings) { s.Timeout = d } }

// WithIdleTimeout bounds how long the server may send nothing: the wait for
// a stream's response headers and every gap between two reads of a response
// body (stream chunks, keep-alive comments, or the bytes of a whole answer).
// Without streaming, the wait for the response headers is the model's whole
// thinking time and only WithTimeout bounds it. Zero means
// DefaultIdleTimeout; negative turns the limit off. When it ends an
// invocation, the error is a *TimeoutError matching ErrIdleTimeout and
// ErrTimeout.
func WithIdleTimeout(d time.Duration) Option { return func(s *settings) { s.IdleTimeout = d } }

// WithTracer records a "chat {model}" span per invocation, after the
// OpenTelemetry GenAI conventions. Without one, tracing costs nothing.
func WithTracer(t trace.Tracer) Option { return func(s *settings) { s.Tracer = t } }

// WithStreaming chooses between a streamed answer (the default) and one
// whole response, for servers that cannot stream. Without streaming no
// deltas are yielded.
func WithStreaming(on bool) Option { return func(s *settings) { s.NoStream = !on } }

// MaxTokensField names the body member Request.MaxTokens goes out as.
type MaxTokensField string

const (
	// MaxTokensAuto (the zero value) sends max_completion_tokens to OpenAI
	// and Azure OpenAI, and for a model of OpenAI's reasoning families
	// (o1, o3, o4, gpt-5, gpt-6 and their variants, also under a gateway's
	// vendor prefix such as "openai/gpt-5") to any server, since those
	// models refuse max_tokens wherever a gateway forwards them; every other
	// model gets max_tokens on every other server: it is the field every
	// chat-completions server knows, while some ignore or refuse the newer
	// one.
	MaxTokensAuto MaxTokensField = ""
	// MaxTokens is the original field, "max_tokens".
	MaxTokens MaxTokensField = "max_tokens"
	// MaxCompletionTokens is OpenAI's newer field, "max_completion_tokens".
	MaxCompletionTokens MaxTokensField = "max_completion_tokens"
)

// WithMaxTokensField chooses the body member Request.MaxTokens goes out as;
// see MaxTokensAuto for the default. Any other value fails New with
// ErrOption.
func WithMaxTokensField(f MaxTokensField) Option { return func(s *settings) { s.maxTokensField = f } }

// WithLegacyMaxTokens is WithMaxTokensField(MaxTokens) when on, and
// WithMaxTokensField(MaxCompletionTokens) when off.
func WithLegacyMaxTokens(on bool) Option {
	if on {
		return WithMaxTokensField(MaxTokens)
	}
	return WithMaxTokensField(MaxCompletionTokens)
}

// EffortField says how WithReasoningEffort goes out.
type EffortField string

const (
	// EffortAuto (the zero value) is EffortObject for OpenRouter and
	// EffortString for every other server.
	EffortAuto EffortField = ""
	// EffortString sends "reasoning_effort": "high", as OpenAI, Azure,
	// Groq, xAI, Gemini, vLLM and Ollama take it.
	EffortString EffortField = "reasoning_effort"
	// EffortObject sends "reasoning": {"effort": "high"}, the object form
	// of gateways such as OpenRouter.
	EffortObject EffortField = "reasoning.effort"
)

// WithReasoningEffortField chooses how WithReasoningEffort goes out; see
// EffortAuto for the default. Any other value fails New with ErrOption.
func WithReasoningEffortField(f EffortField) Option { return func(s *settings) { s.effortField = f } }

// WithExtraBodyField sets a member of every request body; see WithBodyField,
// its per-invocation form, which wins over it. A name the adapter owns or a
// value encoding/json cannot encode fails New with ErrOption.
func WithExtraBodyField(name string, value any) Option {
	return func(s *settings) { s.bodyFields = append(s.bodyFields, bodyField{name, value}) }
}

// WithSendReasoning says whether Reasoning in earlier assistant turns is
// sent back as reasoning_content (the default), which servers that think
// between tool calls need and some other servers reject.
func WithSendReasoning(on bool) Option { return func(s *settings) { s.noReason = !on } }

// WithStrictTools says whether a tool whose schema passes CheckStrict is
// offered in strict mode (the default).
func WithStrictTools(on bool) Option { return func(s *settings) { s.noStrict = !on } }

// withSleep replaces the wait between retries, for tests.
func withSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(s *settings) { s.Sleep = f }
}

// WithJSONSchemaFormat says whether the server honours response_format
// json_schema, which SupportsResponseFormat reports (x/output uses it to
// choose between the response format and a final-answer tool). Unset, it
// is true for OpenAI and Azure OpenAI hosts and false elsewhere: a server
// that ignores the format would answer in prose.
func WithJSONSchemaFormat(on bool) Option { return func(s *settings) { s.jsonSchema = &on } }

// withClock replaces the clock that reads HTTP-date Retry-After values.
func withClock(now func() time.Time) Option { return func(s *settings) { s.Now = now } }

var endpoint = core.Endpoint{
	Prefix: "openai", EnvAPIKey: EnvAPIKey, EnvBaseURL: EnvBaseURL, DefaultBaseURL: DefaultBaseURL,
	ErrNoModel: ErrNoModel, ErrNoAPIKey: ErrNoAPIKey,
}

// New returns a Provider. It fails when no model is set, when no API key is
// set for the default base URL, or when the base URL is not an http(s) URL.
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
	switch s.maxTokensField {
	case MaxTokensAuto:
		s.maxTokensField = MaxTokens
		if isOpenAIHost(u.Hostname()) || reasoningModel(s.Model) {
			s.maxTokensField = MaxCompletionTokens
		}
	case MaxTokens, MaxCompletionTokens:
	default:
		bad = append(bad, fmt.Errorf("%w: WithMaxTokensField(%q): use MaxTokens or MaxCompletionTokens", ErrOption, string(s.maxTokensField)))
	}
	switch s.effortField {
	case EffortAuto:
		s.effortField = EffortString
		if h := u.Hostname(); h == "openrouter.ai" || strings.HasSuffix(h, ".openrouter.ai") {
			s.effortField = EffortObject
		}
	case EffortString, EffortObject:
	default:
		bad = append(bad, fmt.Errorf("%w: WithReasoningEffortField(%q): use EffortString or EffortObject", ErrOption, string(s.effortField)))
	}
	var fields []member
	for _, f := range s.bodyFields {
		m, err := encodeField(f.name, f.value)
		if err != nil {
			bad = append(bad, fmt.Errorf("%w: WithExtraBodyField: %w", ErrOption, err))
			continue
		}
		fields = append(fields, m)
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}

	p := &Provider{
		core: core.NewConn(&s.Settings, u, core.Defaults{
			MaxRetries: DefaultMaxRetries, MaxRetryWait: DefaultMaxRetryWait, IdleTimeout: DefaultIdleTimeout,
		}),
		maxTokensField: s.maxTokensField,
		effortField:    s.effortField,
		bodyFields:     fields,
		sendReason:     !s.noReason,
		strict:         !s.noStrict,
		jsonSchema:     isOpenAIHost(u.Hostname()),
	}
	if s.jsonSchema != nil {
		p.jsonSchema = *s.jsonSchema
	}
	name, _ := json.Marshal(p.core.Model)
	p.modelHead = append([]byte(`{"model":`), name...)
	p.cfg = goopenai.DefaultConfig(s.APIKey)
	p.cfg.BaseURL = p.core.BaseURL
	p.cfg.OrgID = s.org
	p.cfg.EmptyMessagesLimit = streamEmptyLimit
	return p, nil
}

// isOpenAIHost reports whether host is OpenAI's own API or Azure OpenAI.
func isOpenAIHost(host string) bool {
	if host == "api.openai.com" {
		return true
	}
	for _, suffix := range []string{".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"} {
		if strings.HasSuffix(host, suffix) {
			return true
		}
	}
	return false
}

// reasoningFamilies are the model name stems of OpenAI's reasoning models,
// which take max_completion_tokens and refuse max_tokens.
var reasoningFamilies = []string{"o1", "o3", "o4", "gpt-5", "gpt-6"}

// reasoningModel reports whether model belongs to one of OpenAI's
// reasoning families (such as "o4-mini", "gpt-5.1-codex" or
// "gpt-5-2025-08-07"), also under the vendor prefix gateways add
// ("openai/gpt-5" on OpenRouter, "azure/o3-mini" on LiteLLM). The name is
// what decides, not the host: a gateway may have any host.
func reasoningModel(model string) bool {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	for _, f := range reasoningFamilies {
		rest, ok := strings.CutPrefix(name, f)
		if ok && (rest == "" || strings.ContainsRune("-._:@", rune(rest[0]))) {
			return true
		}
	}
	return false
}

// Model returns the model the provider asks for.
func (p *Provider) Model() string { return p.core.Model }

// BaseURL returns the server the provider talks to.
func (p *Provider) BaseURL() string { return p.core.BaseURL }

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

// errStopped marks a consumer that stopped iterating; nothing more may be
// yielded.
var errStopped = core.ErrStopped

// result is what an invocation learned, for the span.
type result = genaispan.Result

func (p *Provider) invoke(ctx context.Context, req *provider.Request, yield func(artifact.Artifact, error) bool) (*result, error) {
	res := &result{}
	creq, patch, edits, err := p.buildRequest(req)
	if err != nil {
		return res, err
	}
	ctx, guard, stop := core.Limits(ctx, p.core.Timeout, p.core.IdleTimeout, timeoutError)
	defer stop()
	ct := &callTransport{p: p, patch: patch, edits: edits, stream: p.core.Stream, idle: guard}
	cfg := p.cfg
	cfg.HTTPClient = ct
	client := goopenai.NewClientWithConfig(cfg)
	if p.core.Stream {
		return res, p.runStream(ctx, client, ct, creq, res, yield)
	}
	return res, p.runWhole(ctx, client, ct, creq, res, yield)
}
