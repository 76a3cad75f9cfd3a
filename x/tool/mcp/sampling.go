package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// DefaultSamplingMaxTokens caps a sampled answer unless
// WithSamplingMaxTokens says otherwise.
const DefaultSamplingMaxTokens = 1024

// SamplingRequest is what a server asks the application's model, shown
// to an approval callback.
type SamplingRequest struct {
	// Server is the client's name (WithName).
	Server string
	// SystemPrompt and Messages are the server's prompt; only text
	// content is passed to the model.
	SystemPrompt string
	Messages     []SamplingMessage
	// MaxTokens is the cap that applies: the server's, lowered to the
	// client's.
	MaxTokens int
}

// SamplingMessage is one message of a sampling request.
type SamplingMessage struct {
	Role string // "user" or "assistant"
	Text string
}

// SamplingOption configures sampling.
type SamplingOption func(*sampling)

type sampling struct {
	prov      provider.Provider
	maxTokens int
	approve   func(context.Context, SamplingRequest) (bool, error)
}

// WithSamplingMaxTokens caps the tokens of each sampled answer, whatever
// the server asks; zero or less means DefaultSamplingMaxTokens.
func WithSamplingMaxTokens(n int) SamplingOption { return func(s *sampling) { s.maxTokens = n } }

// WithSamplingApproval has fn see each request before the model does, so
// a person can refuse it; false (or an error) refuses it, and the server
// gets a "rejected" error.
func WithSamplingApproval(fn func(ctx context.Context, req SamplingRequest) (bool, error)) SamplingOption {
	return func(s *sampling) { s.approve = fn }
}

// WithSampling lets servers ask prov for completions
// (sampling/createMessage). Sampling is off unless this is given: a
// server's prompt then spends the application's tokens, so each answer is
// capped (WithSamplingMaxTokens) and may need approval
// (WithSamplingApproval). A nil provider is an error.
func WithSampling(prov provider.Provider, opts ...SamplingOption) Option {
	return func(c *config) {
		if prov == nil {
			c.fail("WithSampling: nil provider")
			return
		}
		s := &sampling{prov: prov}
		for _, o := range opts {
			if o != nil {
				o(s)
			}
		}
		if s.maxTokens <= 0 {
			s.maxTokens = DefaultSamplingMaxTokens
		}
		c.features.sampling = s
	}
}

// ErrSamplingRejected is sent to a server whose sampling request the
// approval callback refused.
var ErrSamplingRejected = errors.New("mcp: the user rejected the sampling request")

// codeUserRejected is the JSON-RPC code MCP names for a refused sampling
// request.
const codeUserRejected = -1

func (c *Client) samplingOptions(opts *sdk.ClientOptions) {
	if c.cfg.features.sampling == nil {
		return
	}
	opts.Capabilities.Sampling = &sdk.SamplingCapabilities{}
	opts.CreateMessageHandler = c.onSample
}

func (c *Client) onSample(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	s := c.cfg.features.sampling
	p := req.Params
	sr := SamplingRequest{Server: c.cfg.name, SystemPrompt: p.SystemPrompt, MaxTokens: s.maxTokens}
	if p.MaxTokens > 0 && int(p.MaxTokens) < sr.MaxTokens {
		sr.MaxTokens = int(p.MaxTokens)
	}
	var turns []ledger.Turn
	if p.SystemPrompt != "" {
		turns = append(turns, ledger.Turn{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: p.SystemPrompt}}})
	}
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		text, ok := m.Content.(*sdk.TextContent)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("lode samples text only; a %s message holds %T", m.Role, m.Content)}
		}
		role := ledger.RoleUser
		if m.Role == "assistant" {
			role = ledger.RoleAssistant
		}
		sr.Messages = append(sr.Messages, SamplingMessage{Role: string(m.Role), Text: text.Text})
		turns = append(turns, ledger.Turn{Role: role, Artifacts: []artifact.Artifact{artifact.Text{Content: text.Text}}})
	}
	if s.approve != nil {
		ok, err := s.approve(ctx, sr)
		if err != nil || !ok {
			msg := ErrSamplingRejected.Error()
			if err != nil {
				msg += ": " + err.Error()
			}
			return nil, &jsonrpc.Error{Code: codeUserRejected, Message: msg}
		}
	}
	preq := &provider.Request{Turns: turns, MaxTokens: sr.MaxTokens, Stop: p.StopSequences}
	var out strings.Builder
	stop := "endTurn"
	for a, err := range s.prov.Invoke(ctx, preq) {
		if err != nil {
			return nil, fmt.Errorf("mcp: sampling for server %q: %w", c.cfg.name, err)
		}
		switch a := a.(type) {
		case artifact.Text:
			out.WriteString(a.Content)
		case artifact.Finish:
			if a.Reason == "length" {
				stop = "maxTokens"
			}
		}
	}
	model := "lode"
	if m, ok := s.prov.(interface{ Model() string }); ok && m.Model() != "" {
		model = m.Model()
	}
	return &sdk.CreateMessageResult{
		Content:    &sdk.TextContent{Text: out.String()},
		Model:      model,
		Role:       "assistant",
		StopReason: stop,
	}, nil
}
