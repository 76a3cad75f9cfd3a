package gemini

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"path"
	"strings"

	"google.golang.org/genai"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

// WithTools offers tools to the model on one invocation, exactly as
// provider.WithTools does.
func WithTools(tools []tool.Tool) provider.InvokeOption { return provider.WithTools(tools) }

type extKey int

const extThinking extKey = iota

// WithThinking sets the thinking budget of one invocation, overriding
// WithThinkingBudget: tokens the model may think, 0 to turn thinking off
// where the model allows, -1 to let the model decide. Another value is a
// *RequestError.
func WithThinking(budget int) provider.InvokeOption {
	return provider.OptionFunc(func(_ context.Context, _ ledger.State, r *provider.Request) error {
		r.SetExtension(extThinking, budget)
		return nil
	})
}

// Reasoning fields this adapter writes, so that what the server sent goes
// back as it came. Reasoning of other fields (another adapter's) is not
// sent: Gemini would refuse a signature it did not make.
const (
	// FieldThought marks a thought part: Content is its text, Signature
	// its thoughtSignature.
	FieldThought = "gemini_thought"
	// FieldSignature marks the thoughtSignature of the part made from the
	// next Text or ToolCall of the turn. With neither before the next
	// Reasoning or the turn's end, it came on an empty text part, and goes
	// back as one.
	FieldSignature = "gemini_signature"
	// FieldPart holds, in Data, a part of a kind this adapter does not map
	// (executable code, code results, inline data from the model, ...),
	// as the server sent it.
	FieldPart = "gemini_part"
)

// emptyToolResult stands for a result with no content.
const emptyToolResult = "(no output)"

// build maps a request to the SDK's contents and config.
func (p *Provider) build(req *provider.Request) ([]*genai.Content, *genai.GenerateContentConfig, sigFixes, error) {
	off := false
	cfg := &genai.GenerateContentConfig{AutomaticContinuation: &off}
	fixes := sigFixes{}
	contents, system, err := buildContents(req.Turns, fixes)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(contents) == 0 {
		return nil, nil, nil, reqErr("no user, assistant or tool turn to send: the API needs at least one")
	}
	if len(system) > 0 {
		cfg.SystemInstruction = &genai.Content{Role: genai.RoleUser, Parts: system}
	}
	if err := buildTools(req, cfg); err != nil {
		return nil, nil, nil, err
	}
	if req.MaxTokens < 0 || req.MaxTokens > math.MaxInt32 {
		return nil, nil, nil, reqErr("MaxTokens %d is out of range", req.MaxTokens)
	}
	cfg.MaxOutputTokens = int32(req.MaxTokens)
	if req.Temperature != nil {
		t := float32(*req.Temperature)
		cfg.Temperature = &t
	}
	if req.TopP != nil {
		t := float32(*req.TopP)
		cfg.TopP = &t
	}
	cfg.StopSequences = req.Stop
	if f := req.ResponseFormat; f != nil {
		switch f.Type {
		case provider.ResponseFormatJSONSchema:
			cfg.ResponseMIMEType = "application/json"
			if len(f.Schema) > 0 {
				if !json.Valid(f.Schema) {
					return nil, nil, nil, reqErr("the response format's schema is not JSON")
				}
				cfg.ResponseJsonSchema = f.Schema
			}
		case provider.ResponseFormatJSONObject:
			cfg.ResponseMIMEType = "application/json"
		case "":
		default:
			return nil, nil, nil, reqErr("response format %q: use %q or %q", f.Type, provider.ResponseFormatJSONSchema, provider.ResponseFormatJSONObject)
		}
	}
	if p.thinking != nil {
		tc := *p.thinking
		cfg.ThinkingConfig = &tc
	}
	if v, ok := req.Extension(extThinking); ok {
		budget, _ := v.(int)
		if budget < -1 || budget > math.MaxInt32 {
			return nil, nil, nil, reqErr("WithThinking(%d): a budget is -1 (dynamic), 0 (off) or a count of tokens", budget)
		}
		if cfg.ThinkingConfig == nil {
			cfg.ThinkingConfig = &genai.ThinkingConfig{}
		}
		b := int32(budget)
		cfg.ThinkingConfig.ThinkingBudget = &b
	}
	return contents, cfg, fixes, nil
}

func buildTools(req *provider.Request, cfg *genai.GenerateContentConfig) error {
	names := make(map[string]bool, len(req.Tools))
	if len(req.Tools) > 0 {
		decls := make([]*genai.FunctionDeclaration, 0, len(req.Tools))
		for _, t := range req.Tools {
			schema := t.Schema
			if len(schema) == 0 {
				schema = json.RawMessage(`{"type":"object","properties":{}}`)
			} else if !json.Valid(schema) {
				return &RequestError{Turn: -1, Tool: t.Name, Reason: "the schema is not JSON"}
			}
			names[t.Name] = true
			decls = append(decls, &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: schema})
		}
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	var fc *genai.FunctionCallingConfig
	switch c := req.ToolChoice; c.Mode {
	case "":
	case provider.ToolChoiceAuto:
		fc = &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAuto}
	case provider.ToolChoiceNone:
		fc = &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeNone}
	case provider.ToolChoiceRequired:
		if len(req.Tools) == 0 {
			return reqErr("tool choice %q with no tools offered", c.Mode)
		}
		fc = &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny}
	case provider.ToolChoiceTool:
		if !names[c.Name] {
			return reqErr("tool choice names %q, which is not among the tools offered", c.Name)
		}
		fc = &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{c.Name}}
	default:
		return reqErr("tool choice %q: use auto, none, required or tool", c.Mode)
	}
	if fc != nil && len(req.Tools) > 0 {
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: fc}
	}
	return nil
}

// contentBuilder joins consecutive parts of one role into one content, and
// makes none of a turn with no parts (the API refuses a content without
// parts): a user message an input guard stopped, or an answer an output
// guard stopped, which holds only Usage, Finish and a Tripwire. The user
// turns on either side of such an answer then join one content.
type contentBuilder struct {
	out []*genai.Content
}

func (b *contentBuilder) add(role string, parts ...*genai.Part) {
	if len(parts) == 0 {
		return
	}
	if n := len(b.out); n > 0 && b.out[n-1].Role == role {
		b.out[n-1].Parts = append(b.out[n-1].Parts, parts...)
		return
	}
	b.out = append(b.out, &genai.Content{Role: role, Parts: parts})
}

func buildContents(turns []ledger.Turn, fixes sigFixes) ([]*genai.Content, []*genai.Part, error) {
	var b contentBuilder
	var system []*genai.Part
	names := make(map[string]string) // tool-call ID -> name, for results without one
	for i, t := range turns {
		switch t.Role {
		case ledger.RoleSystem:
			for _, a := range t.Artifacts {
				switch a := a.(type) {
				case artifact.Text:
					if a.Content != "" {
						system = append(system, &genai.Part{Text: a.Content})
					}
				case artifact.Summary, artifact.Tripwire:
				default:
					return nil, nil, turnErr(i, t.Role, "a system turn carries text only, not %s", a.Kind())
				}
			}
		case ledger.RoleUser:
			parts, err := userParts(i, t)
			if err != nil {
				return nil, nil, err
			}
			b.add(genai.RoleUser, parts...)
		case ledger.RoleAssistant:
			parts, err := modelParts(i, t, names, fixes)
			if err != nil {
				return nil, nil, err
			}
			b.add(genai.RoleModel, parts...)
		case ledger.RoleTool:
			for _, a := range t.Artifacts {
				r, ok := a.(artifact.ToolResult)
				if !ok {
					continue // approval and guard records and the like stay in the ledger
				}
				part, err := resultPart(i, t.Role, r, names)
				if err != nil {
					return nil, nil, err
				}
				b.add(genai.RoleUser, part)
			}
		default:
			return nil, nil, turnErr(i, t.Role, "unknown role")
		}
	}
	return b.out, system, nil
}

func userParts(i int, t ledger.Turn) ([]*genai.Part, error) {
	var parts []*genai.Part
	for _, a := range t.Artifacts {
		switch a := a.(type) {
		case artifact.Text:
			if a.Content != "" { // the API refuses a part with no data
				parts = append(parts, &genai.Part{Text: a.Content})
			}
		case artifact.Image:
			p, err := mediaPart(a.URL, a.MIMEType, a.Data, "image/png")
			if err != nil {
				return nil, &RequestError{Turn: i, Role: t.Role, Reason: "image", Err: err}
			}
			parts = append(parts, p)
		case artifact.Audio:
			parts = append(parts, &genai.Part{InlineData: &genai.Blob{MIMEType: orDefault(a.MIMEType, "audio/wav"), Data: a.Data}})
		case artifact.Resource:
			switch {
			case a.Text != "":
				parts = append(parts, &genai.Part{Text: fmt.Sprintf("[resource %s]\n%s", a.URI, a.Text)})
			case len(a.Blob) > 0:
				if a.MIMEType == "" {
					return nil, turnErr(i, t.Role, "resource %q has bytes and no MIME type", a.URI)
				}
				parts = append(parts, &genai.Part{InlineData: &genai.Blob{MIMEType: a.MIMEType, Data: a.Blob}})
			default:
				parts = append(parts, &genai.Part{Text: fmt.Sprintf("[resource %s]", a.URI)})
			}
		case artifact.ResourceLink:
			parts = append(parts, &genai.Part{Text: fmt.Sprintf("[resource link %s %s]", orDefault(a.Name, a.Title), a.URI)})
		case artifact.Summary, artifact.Pending, artifact.Decision, artifact.Tripwire:
		default:
			return nil, turnErr(i, t.Role, "a user turn cannot carry %s", a.Kind())
		}
	}
	return parts, nil
}

// mediaPart is inline bytes, or a file URI (gs:// or https) the API fetches.
func mediaPart(uri, mimeType string, data []byte, fallback string) (*genai.Part, error) {
	if len(data) > 0 {
		return &genai.Part{InlineData: &genai.Blob{MIMEType: orDefault(mimeType, fallback), Data: data}}, nil
	}
	if uri == "" {
		return nil, fmt.Errorf("neither bytes nor a URL")
	}
	if mimeType == "" {
		mimeType = mime.TypeByExtension(path.Ext(strings.SplitN(uri, "?", 2)[0]))
	}
	if mimeType == "" {
		return nil, fmt.Errorf("the URL %q names no MIME type the API could use: set MIMEType", uri)
	}
	return &genai.Part{FileData: &genai.FileData{FileURI: uri, MIMEType: mimeType}}, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func modelParts(i int, t ledger.Turn, names map[string]string, fixes sigFixes) ([]*genai.Part, error) {
	var parts []*genai.Part
	var sig []byte // the signature the next text or call carries
	pending := false
	flush := func() {
		if pending {
			parts = append(parts, &genai.Part{Text: "", ThoughtSignature: sig})
			pending, sig = false, nil
		}
	}
	for _, a := range t.Artifacts {
		switch a := a.(type) {
		case artifact.Text:
			if a.Content == "" && !pending {
				continue // the API refuses a part with no data
			}
			parts = append(parts, &genai.Part{Text: a.Content, ThoughtSignature: sig})
			pending, sig = false, nil
		case artifact.ToolCall:
			if a.Name == "" {
				return nil, turnErr(i, t.Role, "tool call %q has no name", a.ID)
			}
			names[a.ID] = a.Name
			parts = append(parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: wireID(a.ID), Name: a.Name, Args: callArgs(a.Arguments)}, ThoughtSignature: sig})
			pending, sig = false, nil
		case artifact.Reasoning:
			switch a.Field {
			case FieldThought:
				flush()
				s, err := fixes.decode(a.Signature)
				if err != nil {
					return nil, &RequestError{Turn: i, Role: t.Role, Reason: "a thought's signature", Err: err}
				}
				parts = append(parts, &genai.Part{Text: a.Content, Thought: true, ThoughtSignature: s})
			case FieldSignature:
				flush()
				s, err := fixes.decode(a.Signature)
				if err != nil {
					return nil, &RequestError{Turn: i, Role: t.Role, Reason: "a thought signature", Err: err}
				}
				sig, pending = s, true
			case FieldPart:
				flush()
				var part genai.Part
				if err := json.Unmarshal([]byte(a.Data), &part); err != nil {
					return nil, &RequestError{Turn: i, Role: t.Role, Reason: "a kept part is not a part", Err: err}
				}
				var signed struct {
					ThoughtSignature string `json:"thoughtSignature"`
				}
				if json.Unmarshal([]byte(a.Data), &signed) == nil {
					_, _ = fixes.decode(signed.ThoughtSignature)
				}
				parts = append(parts, &part)
			}
		}
	}
	flush()
	return parts, nil
}

// sigFixes maps a signature as the SDK will encode it to the text the
// server sent, for the few that differ (unpadded, URL-safe, or with stray
// low bits), so that the request carries the server's text exactly.
type sigFixes map[string]string

func (f sigFixes) decode(s string) ([]byte, error) {
	b, err := decodeSignature(s)
	if err == nil && len(b) > 0 {
		if canon := base64.StdEncoding.EncodeToString(b); canon != s {
			f[canon] = s
		}
	}
	return b, err
}

// apply puts the server's text back in a request body.
func (f sigFixes) apply(body []byte) []byte {
	for canon, orig := range f {
		body = bytes.ReplaceAll(body, []byte(`"`+canon+`"`), []byte(`"`+orig+`"`))
	}
	return body
}

// decodeSignature reads a thoughtSignature as the server sent it (base64,
// padded as Google pads it, or not). The SDK encodes it back in the
// standard padded form, which is the text the server sent.
func decodeSignature(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	if b, err := base64.URLEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not base64", shorten(s))
	}
	return b, nil
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// callArgs is a call's arguments as the object the API takes. Arguments
// that are not a JSON object go back as {}: the tool's result has already
// told the model what was wrong with them.
func callArgs(s string) map[string]any {
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil || m == nil {
		return map[string]any{}
	}
	return m
}

func resultPart(i int, role ledger.Role, r artifact.ToolResult, names map[string]string) (*genai.Part, error) {
	name := r.Name
	if name == "" {
		name = names[r.ToolCallID]
	}
	if name == "" {
		return nil, turnErr(i, role, "tool result %q names no tool, and no call of that ID precedes it", r.ToolCallID)
	}
	content := r.Content
	if content == "" && len(r.Parts) == 0 {
		content = emptyToolResult
	}
	key := "output"
	if r.IsError {
		key = "error"
	}
	fr := &genai.FunctionResponse{ID: wireID(r.ToolCallID), Name: name, Response: map[string]any{key: content}}
	for _, a := range r.Parts {
		switch a := a.(type) {
		case artifact.Image:
			if len(a.Data) > 0 {
				fr.Parts = append(fr.Parts, &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{MIMEType: orDefault(a.MIMEType, "image/png"), Data: a.Data}})
			}
		case artifact.Resource:
			if len(a.Blob) > 0 && a.MIMEType != "" {
				fr.Parts = append(fr.Parts, &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{MIMEType: a.MIMEType, Data: a.Blob}})
			}
		}
	}
	return &genai.Part{FunctionResponse: fr}, nil
}
