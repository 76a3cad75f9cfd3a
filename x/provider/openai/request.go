package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"

	"github.com/lodeworks/lode/x/provider/internal/apierr"
	"github.com/lodeworks/lode/x/provider/internal/partconv"
)

// WithTools offers tools to the model on one invocation. It sets
// Request.Tools exactly as provider.WithTools does, so it composes with
// every other option that sets the tools (the last one wins).
func WithTools(tools []tool.Tool) provider.InvokeOption { return provider.WithTools(tools) }

type extKey int

const (
	extReasoningEffort extKey = iota
	extSeed
	extUser
	extBody
)

// WithReasoningEffort sets reasoning_effort ("low", "medium", "high", ...)
// for models that think.
func WithReasoningEffort(effort string) provider.InvokeOption {
	return setExt(extReasoningEffort, effort)
}

// WithSeed asks for deterministic sampling with seed.
func WithSeed(seed int) provider.InvokeOption { return setExt(extSeed, seed) }

// WithUser sends a stable identifier of the end user, for abuse monitoring.
func WithUser(user string) provider.InvokeOption { return setExt(extUser, user) }

// WithBodyField sets a member of the request body on one invocation, for
// what a server takes beyond the adapter's options: a gateway's provider
// routing, OpenRouter's "usage": {"include": true}, a sampling knob. value
// is encoded with encoding/json (a json.RawMessage goes as it is). The
// member replaces one the adapter would write under the same name, and wins
// over the provider's WithExtraBodyField; "model", "messages" and "stream"
// belong to the adapter and are refused with a *RequestError.
func WithBodyField(name string, value any) provider.InvokeOption {
	return provider.OptionFunc(func(_ context.Context, _ ledger.State, r *provider.Request) error {
		fields, _ := r.Extension(extBody)
		list, _ := fields.([]bodyField)
		r.SetExtension(extBody, append(slices.Clip(list), bodyField{name, value}))
		return nil
	})
}

type bodyField struct {
	name  string
	value any
}

// reservedFields are the body members only the adapter writes.
var reservedFields = []string{"model", "messages", "stream"}

func encodeField(name string, value any) (member, error) {
	if name == "" {
		return member{}, errors.New("a body field needs a name")
	}
	if slices.Contains(reservedFields, name) {
		return member{}, fmt.Errorf("body field %q belongs to the adapter and cannot be set", name)
	}
	b, err := json.Marshal(value)
	if err != nil {
		return member{}, fmt.Errorf("body field %q: %w", name, err)
	}
	return member{name, b}, nil
}

func setExt(k extKey, v any) provider.InvokeOption {
	return provider.OptionFunc(func(_ context.Context, _ ledger.State, r *provider.Request) error {
		r.SetExtension(k, v)
		return nil
	})
}

// RequestError reports a Request that cannot be sent: an artifact a role
// cannot carry, a tool with a broken schema, a tool choice naming no offered
// tool, a value out of range. Nothing was sent.
type RequestError struct {
	// Turn is the index in Request.Turns of the offending turn, or -1.
	Turn int
	Role ledger.Role
	// Tool names the offending tool, if any.
	Tool   string
	Reason string
	Err    error
}

func (e *RequestError) Error() string {
	return apierr.RequestText("openai", e.Turn, string(e.Role), e.Tool, e.Reason, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }

func reqErr(reason string, args ...any) *RequestError {
	return &RequestError{Turn: -1, Reason: fmt.Sprintf(reason, args...)}
}

func turnErr(i int, role ledger.Role, reason string, args ...any) *RequestError {
	return &RequestError{Turn: i, Role: role, Reason: fmt.Sprintf(reason, args...)}
}

// defaultSchema is what an empty tool.Tool.Schema means.
var defaultSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// emptyToolResult stands for a result with no content: the API refuses a
// tool message without one.
const emptyToolResult = "(no output)"

// buildRequest maps req to go-openai's request. patch holds JSON members
// go-openai cannot express (a zero temperature or top_p, which its
// omitempty drops), for the transport to add to the body.
//
// go-openai is given no model name: before it sends, it refuses requests by
// the name alone (max_tokens, a temperature, tools for o1*, o3*, o4*,
// gpt-5* and some gpt-6 names; whole families of older names), rules
// written for OpenAI's own server that a gateway, a fine-tune or a newer
// model need not follow. The transport writes the name into the body; what
// the server makes of the request is the server's to say.
func (p *Provider) buildRequest(req *provider.Request) (goopenai.ChatCompletionRequest, []byte, *bodyEdits, error) {
	var creq goopenai.ChatCompletionRequest
	edits := &bodyEdits{}
	creq, patch, err := p.buildInto(req, creq, edits)
	return creq, patch, edits, err
}

func (p *Provider) buildInto(req *provider.Request, creq goopenai.ChatCompletionRequest, edits *bodyEdits) (goopenai.ChatCompletionRequest, []byte, error) {
	msgs, err := p.messages(req.Turns, edits)
	if err != nil {
		return creq, nil, err
	}
	creq.Messages = msgs

	if len(req.Tools) > 0 {
		if creq.Tools, err = p.tools(req.Tools); err != nil {
			return creq, nil, err
		}
		if req.ParallelToolCalls != nil {
			creq.ParallelToolCalls = *req.ParallelToolCalls
		}
	}
	if creq.ToolChoice, err = toolChoice(req.ToolChoice, req.Tools); err != nil {
		return creq, nil, err
	}

	switch {
	case req.MaxTokens < 0:
		return creq, nil, reqErr("MaxTokens is %d; it must not be negative", req.MaxTokens)
	case p.maxTokensField == MaxTokens:
		creq.MaxTokens = req.MaxTokens
	default:
		creq.MaxCompletionTokens = req.MaxTokens
	}
	var patch []byte
	for _, f := range []struct {
		name string
		v    *float64
		dst  *float32
	}{{"temperature", req.Temperature, &creq.Temperature}, {"top_p", req.TopP, &creq.TopP}} {
		if f.v == nil {
			continue
		}
		if math.IsNaN(*f.v) || math.IsInf(*f.v, 0) {
			return creq, nil, reqErr("%s is %v; it must be a finite number", f.name, *f.v)
		}
		if *f.v == 0 {
			patch = append(patch, `"`+f.name+`":0,`...)
			continue
		}
		*f.dst = float32(*f.v)
	}
	creq.Stop = req.Stop
	if creq.ResponseFormat, err = p.responseFormat(req.ResponseFormat); err != nil {
		return creq, nil, err
	}
	if p.core.Stream {
		creq.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	}
	if v, ok := req.Extension(extReasoningEffort); ok {
		if effort, _ := v.(string); effort != "" {
			if p.effortField == EffortObject {
				b, _ := json.Marshal(map[string]string{"effort": effort})
				edits.setTop(member{"reasoning", b})
			} else {
				creq.ReasoningEffort = effort
			}
		}
	}
	if v, ok := req.Extension(extSeed); ok {
		if seed, ok := v.(int); ok {
			creq.Seed = &seed
		}
	}
	if v, ok := req.Extension(extUser); ok {
		creq.User, _ = v.(string)
	}
	for _, m := range p.bodyFields {
		edits.setTop(m)
	}
	if v, ok := req.Extension(extBody); ok {
		list, _ := v.([]bodyField)
		for _, f := range list {
			m, err := encodeField(f.name, f.value)
			if err != nil {
				return creq, nil, &RequestError{Turn: -1, Reason: "WithBodyField", Err: err}
			}
			edits.setTop(m)
		}
	}
	return creq, patch, nil
}

// DefaultResponseFormatName names a json_schema response format whose
// provider.ResponseFormat has no Name.
const DefaultResponseFormatName = "answer"

// responseFormat maps f to response_format: json_object as it is,
// json_schema with the schema, strict when CheckStrict allows (and
// WithStrictTools has not turned strict mode off), as tools are.
func (p *Provider) responseFormat(f *provider.ResponseFormat) (*goopenai.ChatCompletionResponseFormat, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case provider.ResponseFormatJSONObject:
		return &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}, nil
	case provider.ResponseFormatJSONSchema:
		schema := json.RawMessage(bytes.TrimSpace(f.Schema))
		switch {
		case len(schema) == 0:
			return nil, reqErr("response format %q has no schema", f.Type)
		case !json.Valid(schema):
			return nil, reqErr("response format schema is not valid JSON")
		case schema[0] != '{':
			return nil, reqErr("response format schema is not a JSON object")
		}
		name := f.Name
		if name == "" {
			name = DefaultResponseFormatName
		}
		return &goopenai.ChatCompletionResponseFormat{
			Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{
				Name:        name,
				Description: f.Description,
				Schema:      schema,
				Strict:      p.strict && CheckStrict(schema) == nil,
			},
		}, nil
	}
	return nil, reqErr("unknown response format type %q; use %q or %q", f.Type, provider.ResponseFormatJSONSchema, provider.ResponseFormatJSONObject)
}

// SupportsResponseFormat reports whether the server is known to honour
// response_format of type typ: json_object everywhere, json_schema on
// OpenAI and Azure OpenAI, or wherever WithJSONSchemaFormat says so.
func (p *Provider) SupportsResponseFormat(typ string) bool {
	switch typ {
	case provider.ResponseFormatJSONObject:
		return true
	case provider.ResponseFormatJSONSchema:
		return p.jsonSchema
	}
	return false
}

func toolChoice(c provider.ToolChoice, tools []tool.Tool) (any, error) {
	switch c.Mode {
	case "":
		if c.Name != "" {
			return nil, reqErr("tool choice names %q but its Mode is not %q", c.Name, provider.ToolChoiceTool)
		}
		return nil, nil
	case provider.ToolChoiceAuto, provider.ToolChoiceNone:
		// The API refuses a tool_choice without tools; with no tools, both
		// modes already hold.
		if len(tools) == 0 {
			return nil, nil
		}
		return c.Mode, nil
	case provider.ToolChoiceRequired:
		if len(tools) == 0 {
			return nil, reqErr("tool choice %q but no tools are offered", c.Mode)
		}
		return c.Mode, nil
	case provider.ToolChoiceTool:
		for _, t := range tools {
			if t.Name == c.Name {
				return goopenai.ToolChoice{Type: goopenai.ToolTypeFunction, Function: goopenai.ToolFunction{Name: c.Name}}, nil
			}
		}
		return nil, reqErr("tool choice names %q, which is not among the %d tools offered", c.Name, len(tools))
	}
	return nil, reqErr("unknown tool choice mode %q", c.Mode)
}

func (p *Provider) tools(ts []tool.Tool) ([]goopenai.Tool, error) {
	out := make([]goopenai.Tool, 0, len(ts))
	seen := make(map[string]bool, len(ts))
	for i, t := range ts {
		if t.Name == "" {
			return nil, reqErr("tool %d has no name", i)
		}
		if seen[t.Name] {
			return nil, &RequestError{Turn: -1, Tool: t.Name, Reason: "offered twice"}
		}
		seen[t.Name] = true
		schema := json.RawMessage(bytes.TrimSpace(t.Schema))
		if len(schema) == 0 {
			schema = defaultSchema
		} else if !json.Valid(schema) {
			return nil, &RequestError{Turn: -1, Tool: t.Name, Reason: "schema is not valid JSON"}
		} else if schema[0] != '{' {
			return nil, &RequestError{Turn: -1, Tool: t.Name, Reason: "schema is not a JSON object"}
		}
		out = append(out, goopenai.Tool{
			Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Strict:      p.strict && CheckStrict(schema) == nil,
				Parameters:  schema,
			},
		})
	}
	return out, nil
}

func (p *Provider) messages(turns []ledger.Turn, edits *bodyEdits) ([]goopenai.ChatCompletionMessage, error) {
	msgs := make([]goopenai.ChatCompletionMessage, 0, len(turns))
	for i, t := range turns {
		switch t.Role {
		case ledger.RoleSystem, ledger.RoleUser:
			m, ok, err := contentMessage(i, t)
			if err != nil {
				return nil, err
			}
			if ok {
				msgs = append(msgs, m)
			}
		case ledger.RoleAssistant:
			m, extra, ok, err := p.assistantMessage(i, t)
			if err != nil {
				return nil, err
			}
			if ok {
				for _, x := range extra {
					edits.addToMessage(len(msgs), x)
				}
				msgs = append(msgs, m)
			}
		case ledger.RoleTool:
			for _, a := range t.Artifacts {
				switch a.(type) {
				case artifact.Pending, artifact.Decision, artifact.Tripwire:
					continue // approval and guard records: the results say what the model needs
				case artifact.Opaque:
					continue // another adapter's
				}
				r, ok := a.(artifact.ToolResult)
				if !ok {
					return nil, turnErr(i, t.Role, "a tool turn cannot carry %s", kindOf(a))
				}
				if r.ToolCallID == "" {
					return nil, turnErr(i, t.Role, "tool result for %q has no tool call ID", r.Name)
				}
				content := r.Content
				if content == "" {
					content = describeParts(r.Parts)
				}
				if content == "" {
					content = emptyToolResult
				}
				msgs = append(msgs, goopenai.ChatCompletionMessage{
					Role: goopenai.ChatMessageRoleTool, ToolCallID: r.ToolCallID, Content: content,
				})
			}
		default:
			return nil, turnErr(i, t.Role, "unknown role")
		}
	}
	return msgs, nil
}

func kindOf(a artifact.Artifact) string {
	if a == nil {
		return "a nil artifact"
	}
	return a.Kind()
}

// contentMessage maps a system or user turn. One text goes out as a string,
// anything more as content parts. A turn with nothing to say is skipped.
func contentMessage(i int, t ledger.Turn) (goopenai.ChatCompletionMessage, bool, error) {
	m := goopenai.ChatCompletionMessage{Role: string(t.Role)}
	var parts []goopenai.ChatMessagePart
	for _, a := range t.Artifacts {
		switch a := a.(type) {
		case artifact.Text:
			if a.Content != "" {
				parts = append(parts, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: a.Content})
			}
		case artifact.Image:
			if t.Role != ledger.RoleUser {
				return m, false, turnErr(i, t.Role, "a %s turn cannot carry an image", t.Role)
			}
			u, err := partconv.ImageURL(a)
			if err != nil {
				return m, false, turnErr(i, t.Role, "%s", err)
			}
			parts = append(parts, goopenai.ChatMessagePart{
				Type:     goopenai.ChatMessagePartTypeImageURL,
				ImageURL: &goopenai.ChatMessageImageURL{URL: u, Detail: goopenai.ImageURLDetail(a.Detail)},
			})
		case artifact.Resource:
			if len(a.Blob) == 0 {
				parts = append(parts, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: partconv.ResourceText(a)})
				continue
			}
			if t.Role != ledger.RoleUser || !strings.HasPrefix(a.MIMEType, "image/") {
				return m, false, turnErr(i, t.Role, "a %s turn cannot carry resource %s (%s, %d bytes): only text and, from a user, images can be sent",
					t.Role, a.URI, partconv.OrUnknown(a.MIMEType), len(a.Blob))
			}
			u, err := partconv.ImageURL(artifact.Image{MIMEType: a.MIMEType, Data: a.Blob})
			if err != nil {
				return m, false, turnErr(i, t.Role, "resource %s: %s", a.URI, err)
			}
			parts = append(parts, goopenai.ChatMessagePart{
				Type: goopenai.ChatMessagePartTypeImageURL, ImageURL: &goopenai.ChatMessageImageURL{URL: u},
			})
		case artifact.ResourceLink:
			parts = append(parts, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: partconv.LinkText(a)})
		case artifact.Audio:
			return m, false, turnErr(i, t.Role, "a %s turn cannot carry audio (%s, %d bytes): go-openai's chat messages take only text and images",
				t.Role, partconv.OrUnknown(a.MIMEType), len(a.Data))
		case artifact.Summary:
			// A stored summary reaches the model only through a history
			// policy, which puts its text in the request; the turns it
			// covers are still in the history.
		case artifact.Opaque:
			// Another adapter's content (Claude's server tool blocks): only
			// that adapter can send it.
		case artifact.Tripwire:
			// A guard's record, never the model's. A user message an input
			// guard stopped comes without its artifacts, and is skipped below.
		default:
			return m, false, turnErr(i, t.Role, "a %s turn cannot carry %s", t.Role, kindOf(a))
		}
	}
	switch {
	case len(parts) == 0:
		return m, false, nil
	case len(parts) == 1 && parts[0].Type == goopenai.ChatMessagePartTypeText:
		m.Content = parts[0].Text
	default:
		m.MultiContent = parts
	}
	return m, true, nil
}

// notShown ends the note on a part of a tool result the API cannot carry.
const notShown = "not shown: tool results reach the model as text only"

// describeParts stands in for the Content of a tool result that has none
// but returned parts: the text of text parts and text resources, and a
// note in brackets for each part a tool message cannot carry, so that the
// model neither sees "(no output)" nor takes the result for more than it
// got.
func describeParts(parts artifact.List) string {
	var notes []string
	for _, p := range parts {
		switch p := p.(type) {
		case artifact.Text:
			if p.Content != "" {
				notes = append(notes, p.Content)
			}
		case artifact.Resource:
			if len(p.Blob) == 0 {
				notes = append(notes, partconv.ResourceText(p))
			} else {
				notes = append(notes, fmt.Sprintf("[resource %s (%s), %d bytes — %s]", p.URI, partconv.OrUnknown(p.MIMEType), len(p.Blob), notShown))
			}
		case artifact.ResourceLink:
			notes = append(notes, partconv.LinkText(p))
		case artifact.Image:
			if p.URL != "" {
				notes = append(notes, fmt.Sprintf("[image %s — %s]", p.URL, notShown))
			} else {
				notes = append(notes, fmt.Sprintf("[image %s, %d bytes — %s]", partconv.OrUnknown(p.MIMEType), len(p.Data), notShown))
			}
		case artifact.Audio:
			notes = append(notes, fmt.Sprintf("[audio %s, %d bytes — %s]", partconv.OrUnknown(p.MIMEType), len(p.Data), notShown))
		case nil:
		default:
			notes = append(notes, fmt.Sprintf("[%s — %s]", p.Kind(), notShown))
		}
	}
	return strings.Join(notes, "\n")
}

// assistantMessage maps an assistant turn. Usage and Finish are records of
// the answer, not part of it, and a Tripwire a guard's; none is sent. A
// turn left with neither content nor tool calls is skipped: the API
// refuses such a message.
//
// Reasoning goes back where the server put it (Reasoning.Field): its
// structured reasoning_details as they came, and its text as
// reasoning_content too when it came there beside them (ContentField);
// else its text as "reasoning" or, by default, "reasoning_content". extra
// are members go-openai's message cannot carry, for the body to gain.
func (p *Provider) assistantMessage(i int, t ledger.Turn) (m goopenai.ChatCompletionMessage, extra []member, ok bool, err error) {
	m = goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant}
	var (
		parts     []goopenai.ChatMessagePart
		reasoning strings.Builder
		field     string
		details   []string
		both      bool // some reasoning came as reasoning_content and details
	)
	for _, a := range t.Artifacts {
		switch a := a.(type) {
		case artifact.Text:
			if a.Content != "" {
				parts = append(parts, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: a.Content})
			}
		case artifact.Reasoning:
			reasoning.WriteString(a.Content)
			if field == "" {
				field = a.Field
			}
			if a.Field == fieldReasoningDetails && a.Data != "" {
				details = append(details, a.Data)
				both = both || a.ContentField == fieldReasoningContent
			}
		case artifact.ToolCall:
			if a.Name == "" {
				return m, nil, false, turnErr(i, t.Role, "tool call %q has no name", a.ID)
			}
			if a.ID == "" {
				return m, nil, false, turnErr(i, t.Role, "tool call to %q has no ID", a.Name)
			}
			args := a.Arguments
			if strings.TrimSpace(args) == "" {
				// Servers stream no arguments for a tool without
				// parameters; the API wants a JSON text back.
				args = "{}"
			}
			m.ToolCalls = append(m.ToolCalls, goopenai.ToolCall{
				ID: a.ID, Type: goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: a.Name, Arguments: args},
			})
		case artifact.Usage, artifact.Finish, artifact.Opaque, artifact.Tripwire:
			// An Opaque is another adapter's (Claude's server tool blocks,
			// citations): only that adapter can send it. A Tripwire is a
			// guard's record: a stopped answer is stored as it, with Usage
			// and Finish, and so is skipped whole.
		default:
			return m, nil, false, turnErr(i, t.Role, "an assistant turn cannot carry %s", kindOf(a))
		}
	}
	switch {
	case len(parts) == 1:
		m.Content = parts[0].Text
	case len(parts) > 1:
		m.MultiContent = parts
	}
	if len(parts) == 0 && len(m.ToolCalls) == 0 {
		return m, nil, false, nil
	}
	if !p.sendReason {
		return m, nil, true, nil
	}
	// Text that goes out as a member of lode's is written as servers write
	// it (no escaping of <, > and &), not as go-openai would.
	textMember := func(name string) (member, error) {
		b, err := marshalString(reasoning.String())
		if err != nil {
			return member{}, turnErr(i, t.Role, "%s: %s", name, err)
		}
		return member{name, b}, nil
	}
	switch {
	case len(details) > 0:
		list, err := joinLists(details)
		if err != nil {
			return m, nil, false, turnErr(i, t.Role, "reasoning_details: %s", err)
		}
		if both && reasoning.Len() > 0 {
			x, err := textMember(fieldReasoningContent)
			if err != nil {
				return m, nil, false, err
			}
			extra = append(extra, x)
		}
		extra = append(extra, member{fieldReasoningDetails, list})
	case reasoning.Len() == 0:
	case field == fieldReasoning:
		x, err := textMember(fieldReasoning)
		if err != nil {
			return m, nil, false, err
		}
		extra = append(extra, x)
	default:
		m.ReasoningContent = reasoning.String()
	}
	return m, extra, true, nil
}

// joinLists joins JSON lists into one, each kept byte for byte.
func joinLists(lists []string) ([]byte, error) {
	for _, l := range lists {
		if !json.Valid([]byte(l)) || !strings.HasPrefix(strings.TrimSpace(l), "[") {
			return nil, fmt.Errorf("%s is not a JSON list", apierr.Shorten(l, 60))
		}
	}
	if len(lists) == 1 {
		return []byte(lists[0]), nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	n := 0
	for _, l := range lists {
		inner := strings.TrimSpace(l)
		inner = strings.TrimSpace(inner[1 : len(inner)-1])
		if inner == "" {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(inner)
		n++
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}
