package provider

import (
	"context"
	"encoding/json"
	"iter"
	"slices"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
)

// Provider invokes a model.
type Provider interface {
	// Invoke streams the model's answer to req. The sequence yields deltas
	// and then the whole artifacts of the answer; a non-nil error ends it.
	// It must stop promptly when ctx is cancelled or the consumer stops.
	Invoke(ctx context.Context, req *Request) iter.Seq2[artifact.Artifact, error]
}

// Request is what one invocation sends to a model. Zero fields mean "the
// provider's default".
type Request struct {
	// Turns is the history the model sees. Options may replace it (to add a
	// system prompt, or to trim) but must not modify the turns themselves:
	// they are shared with the ledger.
	Turns []ledger.Turn
	// Tools is the set of tools offered to the model on this invocation.
	Tools []tool.Tool
	// ToolChoice says whether and which tool the model must call.
	ToolChoice ToolChoice
	// ParallelToolCalls, when set, allows or forbids several calls per turn.
	ParallelToolCalls *bool
	// MaxTokens caps the tokens of the answer.
	MaxTokens int
	// Temperature and TopP, when set, are sent as given; 0 is a real value.
	Temperature *float64
	TopP        *float64
	// Stop lists sequences that end the answer.
	Stop []string
	// ResponseFormat, when set, asks for an answer in JSON. A provider that
	// cannot express it ignores it; one that can says so by implementing
	// ResponseFormatSupporter, so that a caller can pick another way.
	ResponseFormat *ResponseFormat

	ext map[any]any
}

// SetExtension stores a provider-specific setting under key. Adapters define
// unexported key types so their options cannot collide.
func (r *Request) SetExtension(key, value any) {
	if r.ext == nil {
		r.ext = make(map[any]any)
	}
	r.ext[key] = value
}

// Extension returns the provider-specific setting stored under key.
func (r *Request) Extension(key any) (any, bool) {
	v, ok := r.ext[key]
	return v, ok
}

// ToolChoice tells the model whether to call tools.
type ToolChoice struct {
	// Mode is one of ToolChoiceAuto (also the zero value), ToolChoiceNone,
	// ToolChoiceRequired or ToolChoiceTool.
	Mode string
	// Name is the tool to call when Mode is ToolChoiceTool.
	Name string
}

// Tool choice modes.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceNone     = "none"
	ToolChoiceRequired = "required"
	ToolChoiceTool     = "tool"
)

// Response format types.
const (
	// ResponseFormatJSONSchema asks for JSON matching ResponseFormat.Schema.
	ResponseFormatJSONSchema = "json_schema"
	// ResponseFormatJSONObject asks for any JSON object.
	ResponseFormatJSONObject = "json_object"
)

// ResponseFormat asks a model to answer in JSON rather than prose.
type ResponseFormat struct {
	// Type is ResponseFormatJSONSchema or ResponseFormatJSONObject.
	Type string
	// Name names the schema, where the server asks for one
	// (^[a-zA-Z0-9_-]{1,64}$ on most); empty lets the adapter choose.
	Name string
	// Description tells the model what the answer is for.
	Description string
	// Schema is the JSON Schema the answer must match, for
	// ResponseFormatJSONSchema. Whether the server is asked to enforce it
	// strictly is the adapter's choice, made as for tool schemas.
	Schema json.RawMessage
}

// ResponseFormatSupporter is implemented by a Provider that can send
// Request.ResponseFormat, so that callers can choose between it and a
// fallback (a tool the model must call) without knowing the adapter.
type ResponseFormatSupporter interface {
	// SupportsResponseFormat reports whether the server is known to honour
	// the response format type typ.
	SupportsResponseFormat(typ string) bool
}

// InvokeOption shapes a Request for one invocation.
type InvokeOption interface {
	ApplyInvoke(ctx context.Context, st ledger.State, req *Request) error
}

// OptionFunc adapts a function to an InvokeOption.
type OptionFunc func(ctx context.Context, st ledger.State, req *Request) error

// ApplyInvoke calls f.
func (f OptionFunc) ApplyInvoke(ctx context.Context, st ledger.State, req *Request) error {
	return f(ctx, st, req)
}

// Resolve applies opts in order to req; nil options are skipped.
func Resolve(ctx context.Context, st ledger.State, req *Request, opts ...InvokeOption) error {
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.ApplyInvoke(ctx, st, req); err != nil {
			return err
		}
	}
	return nil
}

// WithTools offers tools to the model, replacing any set before. The slice
// is shared, not copied (a registry snapshot may hold thousands); it is
// clipped, so that an append to Request.Tools never writes into it.
func WithTools(tools []tool.Tool) InvokeOption {
	tools = slices.Clip(tools)
	return OptionFunc(func(_ context.Context, _ ledger.State, r *Request) error {
		r.Tools = tools
		return nil
	})
}

// WithToolChoice sets the tool choice.
func WithToolChoice(c ToolChoice) InvokeOption {
	return OptionFunc(func(_ context.Context, _ ledger.State, r *Request) error {
		r.ToolChoice = c
		return nil
	})
}

// WithParallelToolCalls allows or forbids several tool calls per answer.
func WithParallelToolCalls(on bool) InvokeOption {
	return OptionFunc(func(_ context.Context, _ ledger.State, r *Request) error {
		r.ParallelToolCalls = &on
		return nil
	})
}

// WithMaxTokens caps the tokens of the answer.
func WithMaxTokens(n int) InvokeOption {
	return OptionFunc(func(_ context.Context, _ ledger.State, r *Request) error {
		r.MaxTokens = n
		return nil
	})
}

// WithTemperature sets the sampling temperature; 0 is sent as 0.
func WithTemperature(t float64) InvokeOption {
	return OptionFunc(func(_ context.Context, _ ledger.State, r *Request) error {
		r.Temperature = &t
		return nil
	})
}

// WithTopP sets nucleus sampling.
func WithTopP(p float64) InvokeOption {
	return OptionFunc(func(_ context.Context, _ ledger.State, r *Request) error {
		r.TopP = &p
		return nil
	})
}

// WithStop sets stop sequences.
func WithStop(seqs ...string) InvokeOption {
	seqs = slices.Clip(seqs)
	return OptionFunc(func(_ context.Context, _ ledger.State, r *Request) error {
		r.Stop = seqs
		return nil
	})
}

// WithSystemPrompt puts a system turn with text before the history for this
// invocation only, after any system turns the history already starts with.
// Because it works on the Request and never on the ledger, applying it on
// every round of a run yields exactly one copy. An empty text adds nothing.
func WithSystemPrompt(text string) InvokeOption {
	return OptionFunc(func(_ context.Context, _ ledger.State, r *Request) error {
		if text == "" {
			return nil
		}
		i := 0
		for i < len(r.Turns) && r.Turns[i].Role == ledger.RoleSystem {
			i++
		}
		turns := make([]ledger.Turn, 0, len(r.Turns)+1)
		turns = append(turns, r.Turns[:i]...)
		turns = append(turns, ledger.Turn{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: text}}})
		r.Turns = append(turns, r.Turns[i:]...)
		return nil
	})
}

// WithResponseFormat asks for an answer in JSON (see ResponseFormat); the
// schema is shared, not copied.
func WithResponseFormat(f ResponseFormat) InvokeOption {
	return OptionFunc(func(_ context.Context, _ ledger.State, r *Request) error {
		r.ResponseFormat = &f
		return nil
	})
}
