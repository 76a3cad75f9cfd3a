package responses

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/openai"

	"github.com/lodeworks/lode/x/provider/internal/apierr"
	"github.com/lodeworks/lode/x/provider/internal/partconv"
)

// Where this adapter keeps what the Responses API sends back for itself, in
// artifact.Reasoning.Field.
const (
	// FieldItem marks a reasoning output item: Data is the item's JSON as
	// the server sent it (its ID, summary and encrypted_content), and it
	// goes back as an input item exactly so. Content is the summary text,
	// Signature the encrypted_content.
	FieldItem = "openai.responses.reasoning"
	// FieldResponseID marks the ID of the response an answer came in
	// (Data), kept only with WithPreviousResponse; it has no Content.
	FieldResponseID = "openai.responses.response_id"
)

// What this adapter keeps of the hosted tool search, as artifact.Opaque:
// Provider is OpaqueProvider, Type the output item's type, Data the item's
// JSON as the server sent it, which goes back as an input item exactly so.
const (
	OpaqueProvider = "openai.responses"
	// TypeToolSearchCall is the item that says what the model searched
	// for; TypeToolSearchOutput lists the functions the search loaded.
	TypeToolSearchCall   = "tool_search_call"
	TypeToolSearchOutput = "tool_search_output"
)

// DefaultResponseFormatName names a json_schema text format whose
// provider.ResponseFormat has no Name.
const DefaultResponseFormatName = "answer"

// WithTools offers tools to the model on one invocation, exactly as
// provider.WithTools does.
func WithTools(tools []tool.Tool) provider.InvokeOption { return provider.WithTools(tools) }

type extKey int

const (
	extCacheKey extKey = iota
	extEffort
)

// WithPromptCacheKey sends prompt_cache_key, which routes requests that
// share a prefix to the same cache; empty sends none.
func WithPromptCacheKey(key string) provider.InvokeOption {
	return provider.OptionFunc(func(_ context.Context, _ ledger.State, r *provider.Request) error {
		r.SetExtension(extCacheKey, key)
		return nil
	})
}

// WithThreadCacheKey sends the thread's ID as prompt_cache_key, so that
// every turn of a thread hits the cache its earlier turns filled. Give it
// to loop.WithInvokeOptions; it is resolved with each turn's thread.
func WithThreadCacheKey() provider.InvokeOption {
	return provider.OptionFunc(func(_ context.Context, st ledger.State, r *provider.Request) error {
		if st != nil {
			r.SetExtension(extCacheKey, st.ID())
		}
		return nil
	})
}

// WithEffort sets reasoning.effort for one invocation, overriding
// WithReasoningEffort; empty sends none.
func WithEffort(effort string) provider.InvokeOption {
	return provider.OptionFunc(func(_ context.Context, _ ledger.State, r *provider.Request) error {
		r.SetExtension(extEffort, effort)
		return nil
	})
}

// RequestError reports a Request that cannot be sent: an artifact a role
// cannot carry, a tool with a broken schema, a tool choice naming no offered
// tool, a field the Responses API has no place for. Nothing was sent.
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
	return apierr.RequestText("responses", e.Turn, string(e.Role), e.Tool, e.Reason, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }

func reqErr(reason string, args ...any) *RequestError {
	return &RequestError{Turn: -1, Reason: fmt.Sprintf(reason, args...)}
}

func turnErr(i int, role ledger.Role, reason string, args ...any) *RequestError {
	return &RequestError{Turn: i, Role: role, Reason: fmt.Sprintf(reason, args...)}
}

// emptyToolResult stands for a result with no content.
const emptyToolResult = "(no output)"

// Input items as the wire has them. go-openai types input as any, so these
// are lode's own.
type (
	inputMessage struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
	inputPart struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
		Detail   string `json:"detail,omitempty"`
		Filename string `json:"filename,omitempty"`
		FileData string `json:"file_data,omitempty"`
	}
	functionCall struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	functionOutput struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output any    `json:"output"`
	}
)

// buildRequest maps req to go-openai's request type.
func (p *Provider) buildRequest(req *provider.Request) (goopenai.CreateResponseRequest, error) {
	r := goopenai.CreateResponseRequest{Model: p.core.Model}
	store := p.chain
	r.Store = &store
	if !store {
		// Without a stored response the reasoning can only come back
		// from the ledger, encrypted.
		r.Include = []goopenai.ResponseInclude{goopenai.ResponseIncludeReasoningEncryptedContent}
	}
	switch {
	case req.MaxTokens < 0:
		return r, reqErr("MaxTokens is %d; it must not be negative", req.MaxTokens)
	case req.MaxTokens > 0:
		r.MaxOutputTokens = req.MaxTokens
	}
	if req.Temperature != nil {
		t := float32(*req.Temperature)
		r.Temperature = &t
	}
	if req.TopP != nil {
		t := float32(*req.TopP)
		r.TopP = &t
	}
	if len(req.Stop) > 0 {
		return r, reqErr("the Responses API takes no stop sequences (%d given)", len(req.Stop))
	}
	r.ParallelToolCalls = req.ParallelToolCalls
	if len(req.Tools) == 0 {
		r.ParallelToolCalls = nil
	}

	effort := p.effort
	if v, ok := req.Extension(extEffort); ok {
		effort, _ = v.(string)
	}
	if effort != "" || p.summary != "" {
		r.Reasoning = &goopenai.ResponseReasoning{Effort: effort, Summary: p.summary}
	}
	if v, ok := req.Extension(extCacheKey); ok {
		r.PromptCacheKey, _ = v.(string)
	}

	turns := req.Turns
	if p.chain {
		if i, id := lastResponse(turns); id != "" {
			r.PreviousResponseID = id
			turns = turns[i+1:]
		}
	}
	input, err := inputItems(turns, len(req.Turns)-len(turns))
	if err != nil {
		return r, err
	}
	r.Input = input

	if len(req.Tools) > 0 {
		if r.Tools, err = p.tools(req.Tools, p.toolSearch()); err != nil {
			return r, err
		}
	}
	if r.ToolChoice, err = toolChoice(req.ToolChoice, req.Tools); err != nil {
		return r, err
	}
	if r.Text, err = p.textFormat(req.ResponseFormat); err != nil {
		return r, err
	}
	return r, nil
}

// lastResponse finds the newest assistant turn that names its response.
func lastResponse(turns []ledger.Turn) (int, string) {
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].Role != ledger.RoleAssistant {
			continue
		}
		for _, a := range turns[i].Artifacts {
			if r, ok := artifact.Normalize(a).(artifact.Reasoning); ok && r.Field == FieldResponseID && r.Data != "" {
				return i, r.Data
			}
		}
	}
	return -1, ""
}

func toolChoice(c provider.ToolChoice, tools []tool.Tool) (any, error) {
	switch c.Mode {
	case "", provider.ToolChoiceAuto:
		return nil, nil
	case provider.ToolChoiceNone:
		return "none", nil
	case provider.ToolChoiceRequired:
		if len(tools) == 0 {
			return nil, reqErr("tool choice %q with no tools offered", c.Mode)
		}
		return "required", nil
	case provider.ToolChoiceTool:
		for _, t := range tools {
			if t.Name == c.Name {
				return map[string]string{"type": "function", "name": c.Name}, nil
			}
		}
		return nil, reqErr("tool choice names %q, which is not among the tools offered", c.Name)
	}
	return nil, reqErr("unknown tool choice mode %q", c.Mode)
}

// tools offers each tool as a function. strict is always sent: the
// Responses API takes a function without it as strict. With search, a
// Deferred tool goes with defer_loading and the hosted tool_search tool
// goes last, as the API's guide sends it; without, a Deferred tool is sent
// as any other.
func (p *Provider) tools(ts []tool.Tool, search bool) ([]goopenai.ResponseTool, error) {
	out := make([]goopenai.ResponseTool, 0, len(ts)+1)
	deferred := false
	for _, t := range ts {
		schema := json.RawMessage(`{"type":"object","properties":{}}`)
		if len(t.Schema) > 0 {
			var probe map[string]any
			if err := json.Unmarshal(t.Schema, &probe); err != nil {
				return nil, &RequestError{Turn: -1, Tool: t.Name, Reason: "the schema is not a JSON object", Err: err}
			}
			schema = t.Schema
		}
		params := map[string]any{
			"name":       t.Name,
			"parameters": schema,
			"strict":     p.strict && openai.CheckStrict(schema) == nil,
		}
		if t.Description != "" {
			params["description"] = t.Description
		}
		if search && t.Deferred {
			params["defer_loading"] = true
			deferred = true
		}
		out = append(out, goopenai.ResponseTool{Type: goopenai.ToolTypeFunction, Parameters: params})
	}
	if deferred {
		out = append(out, goopenai.ResponseTool{Type: toolTypeSearch})
	}
	return out, nil
}

// toolTypeSearch is the hosted tool search, run by the server over the
// functions sent with defer_loading.
const toolTypeSearch goopenai.ToolType = "tool_search"

// toolSearch says whether Deferred tools go with the hosted tool search:
// as WithToolSearch says, else as SupportsToolSearch says of the model.
func (p *Provider) toolSearch() bool {
	if p.search != nil {
		return *p.search
	}
	return SupportsToolSearch(p.core.Model)
}

// SupportsToolSearch reports whether model takes the hosted tool_search
// tool: gpt-5.4 and later, as OpenAI's guide says. A gateway's vendor
// prefix ("openai/gpt-5.4") is looked through. A name it does not know,
// such as an Azure deployment's, reports false; WithToolSearch overrides.
func SupportsToolSearch(model string) bool {
	m := strings.ToLower(strings.TrimSpace(model))
	m = m[strings.LastIndex(m, "/")+1:]
	rest, ok := strings.CutPrefix(m, "gpt-")
	if !ok {
		return false
	}
	major, rest := leadingInt(rest)
	if major < 0 {
		return false
	}
	minor := 0
	if r, ok := strings.CutPrefix(rest, "."); ok {
		if minor, rest = leadingInt(r); minor < 0 {
			return false
		}
	}
	if rest != "" && rest[0] != '-' {
		return false // gpt-5o, gpt-4o and the like are other families
	}
	return major > 5 || major == 5 && minor >= 4
}

// leadingInt reads the decimal number s begins with, and what follows; -1
// when s begins with no digit.
func leadingInt(s string) (int, string) {
	n, i := 0, 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9' && i < 6; i++ {
		n = n*10 + int(s[i]-'0')
	}
	if i == 0 {
		return -1, s
	}
	return n, s[i:]
}

// textFormat maps a response format to text.format: json_object as is,
// json_schema with its schema, strict when openai.CheckStrict allows.
func (p *Provider) textFormat(f *provider.ResponseFormat) (*goopenai.ResponseTextConfig, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case provider.ResponseFormatJSONObject:
		return &goopenai.ResponseTextConfig{Format: &goopenai.ResponseTextFormat{Type: "json_object"}}, nil
	case provider.ResponseFormatJSONSchema:
		if len(f.Schema) == 0 {
			return nil, reqErr("response format %q has no schema", f.Type)
		}
		var probe map[string]any
		if err := json.Unmarshal(f.Schema, &probe); err != nil {
			return nil, &RequestError{Turn: -1, Reason: "the response format's schema is not a JSON object", Err: err}
		}
		return &goopenai.ResponseTextConfig{Format: &goopenai.ResponseTextFormat{
			Type:        "json_schema",
			Name:        cmp.Or(f.Name, DefaultResponseFormatName),
			Description: f.Description,
			Schema:      f.Schema,
			Strict:      p.strict && openai.CheckStrict(f.Schema) == nil,
		}}, nil
	}
	return nil, reqErr("unknown response format type %q; use %q or %q", f.Type, provider.ResponseFormatJSONSchema, provider.ResponseFormatJSONObject)
}

// inputItems maps the ledger to input items, in order: a system or user
// turn is a message, an assistant turn its items (reasoning as received,
// text, function calls), a tool turn one function_call_output per result.
// base is the index of turns[0] in the request, for errors.
func inputItems(turns []ledger.Turn, base int) ([]any, error) {
	items := make([]any, 0, len(turns)+2)
	for j, t := range turns {
		i := base + j
		switch t.Role {
		case ledger.RoleSystem, ledger.RoleUser:
			parts, err := contentParts(i, t)
			if err != nil {
				return nil, err
			}
			if len(parts) == 0 {
				continue
			}
			var content any = parts
			if len(parts) == 1 && parts[0].Type == "input_text" {
				content = parts[0].Text
			}
			items = append(items, inputMessage{Type: "message", Role: string(t.Role), Content: content})
		case ledger.RoleAssistant:
			var err error
			if items, err = assistantItems(items, i, t); err != nil {
				return nil, err
			}
		case ledger.RoleTool:
			for _, a := range t.Artifacts {
				switch a := artifact.Normalize(a).(type) {
				case artifact.Pending, artifact.Decision, artifact.Tripwire, artifact.Opaque:
					// Approval and guard records: the results say what
					// the model needs. Opaque is another adapter's.
				case artifact.ToolResult:
					items = append(items, functionOutput{Type: "function_call_output", CallID: a.ToolCallID, Output: toolOutput(a)})
				default:
					return nil, turnErr(i, t.Role, "a tool turn carries tool results, not %s", kindOf(a))
				}
			}
		default:
			return nil, turnErr(i, t.Role, "unknown role")
		}
	}
	return items, nil
}

func kindOf(a artifact.Artifact) string {
	if a == nil {
		return "a nil artifact"
	}
	k := a.Kind()
	if strings.ContainsAny(k[:1], "aeiou") {
		return "an " + k + " artifact"
	}
	return "a " + k + " artifact"
}

func contentParts(i int, t ledger.Turn) ([]inputPart, error) {
	var parts []inputPart
	for _, a := range t.Artifacts {
		switch a := artifact.Normalize(a).(type) {
		case artifact.Text:
			if a.Content != "" {
				parts = append(parts, inputPart{Type: "input_text", Text: a.Content})
			}
		case artifact.Summary, artifact.Opaque, artifact.Tripwire:
			// A history policy puts a stored summary's text in the
			// request itself; the turns it covers are still here.
			// Opaque is another adapter's, a Tripwire a guard's record.
		case artifact.ResourceLink:
			parts = append(parts, inputPart{Type: "input_text", Text: partconv.LinkText(a)})
		case artifact.Resource:
			if len(a.Blob) == 0 {
				parts = append(parts, inputPart{Type: "input_text", Text: partconv.ResourceText(a)})
				continue
			}
			if t.Role != ledger.RoleUser {
				return nil, turnErr(i, t.Role, "a system turn carries only text; resource %q is binary", a.URI)
			}
			part, err := blobPart(a.URI, a.MIMEType, a.Blob)
			if err != nil {
				return nil, turnErr(i, t.Role, "%s", err)
			}
			parts = append(parts, part)
		case artifact.Image:
			if t.Role != ledger.RoleUser {
				return nil, turnErr(i, t.Role, "a system turn cannot carry an image")
			}
			u, err := partconv.ImageURL(a)
			if err != nil {
				return nil, turnErr(i, t.Role, "%s", err)
			}
			parts = append(parts, inputPart{Type: "input_image", ImageURL: u, Detail: cmp.Or(a.Detail, "auto")})
		default:
			return nil, turnErr(i, t.Role, "a %s turn cannot carry %s", t.Role, kindOf(a))
		}
	}
	return parts, nil
}

// blobPart sends an image resource as an image and a PDF as a file.
func blobPart(uri, mime string, blob []byte) (inputPart, error) {
	mime = strings.ToLower(mime)
	switch {
	case strings.HasPrefix(mime, "image/"):
		u, err := partconv.ImageURL(artifact.Image{MIMEType: mime, Data: blob})
		return inputPart{Type: "input_image", ImageURL: u, Detail: "auto"}, err
	case mime == "application/pdf":
		name := uri[strings.LastIndex(uri, "/")+1:]
		return inputPart{Type: "input_file", Filename: cmp.Or(name, "document.pdf"),
			FileData: "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(blob)}, nil
	}
	return inputPart{}, fmt.Errorf("resource %s (%s, %d bytes) cannot be sent: the API takes text, images and PDFs", uri, partconv.OrUnknown(mime), len(blob))
}

// assistantItems appends an assistant turn's items in the order the ledger
// holds them, which is the order the server sent them: a reasoning item
// stays right before the function call it led to, as the API requires.
// A tool search's items (artifact.Opaque) go back as received. Reasoning
// from another server (no item), a reasoning item without
// encrypted_content, another adapter's Opaque, Usage, Finish, a Tripwire
// and a response ID are not sent.
func assistantItems(items []any, i int, t ledger.Turn) ([]any, error) {
	for _, a := range t.Artifacts {
		switch a := artifact.Normalize(a).(type) {
		case artifact.Reasoning:
			// Without its encrypted_content a reasoning item names only
			// what a server stored, which with store: false is nothing.
			if a.Field == FieldItem && a.Data != "" && a.Signature != "" {
				if !json.Valid([]byte(a.Data)) {
					return nil, turnErr(i, t.Role, "a stored reasoning item is not JSON")
				}
				items = append(items, json.RawMessage(a.Data))
			}
		case artifact.Text:
			if a.Content != "" {
				items = append(items, inputMessage{Type: "message", Role: "assistant", Content: a.Content})
			}
		case artifact.ToolCall:
			if a.Name == "" || a.ID == "" {
				return nil, turnErr(i, t.Role, "tool call %q to %q lacks a name or an ID", a.ID, a.Name)
			}
			args := a.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			items = append(items, functionCall{Type: "function_call", CallID: a.ID, Name: a.Name, Arguments: args})
		case artifact.Opaque:
			if a.Provider != OpaqueProvider {
				continue // another adapter's: only it can read it
			}
			if !json.Valid([]byte(a.Data)) {
				return nil, turnErr(i, t.Role, "a stored %s item is not JSON", a.Type)
			}
			items = append(items, json.RawMessage(a.Data))
		case artifact.Usage, artifact.Finish, artifact.Tripwire:
			// Records of the answer, not part of it: an answer a guard
			// stopped is these alone, and sends nothing.
		default:
			return nil, turnErr(i, t.Role, "an assistant turn cannot carry %s", kindOf(a))
		}
	}
	return items, nil
}

// toolOutput is a result as function_call_output takes it: its text, or,
// when the tool returned images, a list of text and images. Parts the API
// cannot carry become a bracketed note.
func toolOutput(r artifact.ToolResult) any {
	var parts []inputPart
	var notes []string
	for _, part := range r.Parts {
		switch a := artifact.Normalize(part).(type) {
		case artifact.Image:
			if u, err := partconv.ImageURL(a); err == nil {
				parts = append(parts, inputPart{Type: "input_image", ImageURL: u, Detail: cmp.Or(a.Detail, "auto")})
			} else {
				notes = append(notes, "["+err.Error()+"]")
			}
		case artifact.Text:
			if r.Content == "" && a.Content != "" {
				notes = append(notes, a.Content)
			}
		case artifact.Resource:
			if len(a.Blob) == 0 {
				if r.Content == "" {
					notes = append(notes, partconv.ResourceText(a))
				}
			} else if p, err := blobPart(a.URI, a.MIMEType, a.Blob); err == nil {
				parts = append(parts, p)
			} else {
				notes = append(notes, "["+err.Error()+"]")
			}
		case artifact.ResourceLink:
			if r.Content == "" {
				notes = append(notes, partconv.LinkText(a))
			}
		case artifact.Audio:
			notes = append(notes, fmt.Sprintf("[audio %s, %d bytes — not shown: the API takes no audio in tool results]", partconv.OrUnknown(a.MIMEType), len(a.Data)))
		}
	}
	text := r.Content
	if len(notes) > 0 {
		text = strings.TrimPrefix(text+"\n"+strings.Join(notes, "\n"), "\n")
	}
	if len(parts) == 0 {
		if text == "" {
			return emptyToolResult
		}
		return text
	}
	if text != "" {
		parts = append([]inputPart{{Type: "input_text", Text: text}}, parts...)
	}
	return parts
}
