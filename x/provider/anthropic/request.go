package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/internal/apierr"
)

// WithTools offers tools to the model on one invocation, exactly as
// provider.WithTools does.
func WithTools(tools []tool.Tool) provider.InvokeOption { return provider.WithTools(tools) }

type extKey int

const extThinking extKey = iota

// WithThinking sets the thinking budget of one invocation, overriding
// WithThinkingBudget: 0 or less turns thinking off for it, a budget below
// MinThinkingBudget is a *RequestError.
func WithThinking(budget int) provider.InvokeOption {
	return provider.OptionFunc(func(_ context.Context, _ ledger.State, r *provider.Request) error {
		r.SetExtension(extThinking, budget)
		return nil
	})
}

// RequestError reports a Request that cannot be sent: an artifact a role
// cannot carry, a tool with a broken schema, a tool choice naming no offered
// tool, a value out of range or one thinking does not allow. Nothing was sent.
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
	return apierr.RequestText("anthropic", e.Turn, string(e.Role), e.Tool, e.Reason, e.Err)
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

// fieldRedacted is the Reasoning.Field of a redacted_thinking block, whose
// Data is the block's opaque data.
const fieldRedacted = "redacted_thinking"

// buildParams maps req to the SDK's parameters, plus request options for
// what the SDK's parameters leave out (temperature, top_p).
func (p *Provider) buildParams(req *provider.Request) (sdk.MessageNewParams, []option.RequestOption, error) {
	params := sdk.MessageNewParams{Model: sdk.Model(p.core.Model)}
	var extra []option.RequestOption

	budget := p.thinking
	if v, ok := req.Extension(extThinking); ok {
		budget, _ = v.(int)
		if budget > 0 && budget < MinThinkingBudget {
			return params, nil, reqErr("thinking budget %d is below the API's minimum of %d", budget, MinThinkingBudget)
		}
	}
	thinking := budget > 0

	switch {
	case req.MaxTokens < 0:
		return params, nil, reqErr("MaxTokens is %d; it must not be negative", req.MaxTokens)
	case req.MaxTokens == 0:
		params.MaxTokens = DefaultMaxTokens
		if thinking {
			params.MaxTokens += int64(budget)
		}
	default:
		params.MaxTokens = int64(req.MaxTokens)
		if thinking && req.MaxTokens <= budget {
			return params, nil, reqErr("MaxTokens %d must exceed the thinking budget %d, which counts against it", req.MaxTokens, budget)
		}
	}
	if thinking {
		params.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(budget)}}
	}

	for _, f := range []struct {
		name string
		v    *float64
	}{{"temperature", req.Temperature}, {"top_p", req.TopP}} {
		if f.v == nil {
			continue
		}
		v := *f.v
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1 {
			return params, nil, reqErr("%s is %v; it must be between 0 and 1", f.name, v)
		}
		if thinking {
			switch {
			case f.name == "temperature" && v != 1:
				return params, nil, reqErr("temperature %v cannot be used with thinking: leave it unset or 1", v)
			case f.name == "top_p" && v < 0.95:
				return params, nil, reqErr("top_p %v cannot be used with thinking: leave it unset or between 0.95 and 1", v)
			}
		}
		extra = append(extra, option.WithJSONSet(f.name, v))
	}
	params.StopSequences = req.Stop

	system, msgs, err := messages(req.Turns)
	if err != nil {
		return params, nil, err
	}
	params.System, params.Messages = system, msgs
	if params.Container, err = requestContainer(req.Turns, p.core.Now()); err != nil {
		return params, nil, err
	}

	if len(req.Tools) > 0 {
		if params.Tools, err = tools(req.Tools); err != nil {
			return params, nil, err
		}
	}
	if params.ToolChoice, err = toolChoice(req, thinking); err != nil {
		return params, nil, err
	}
	if req.ResponseFormat != nil {
		if params.OutputConfig.Format, err = p.outputFormat(req.ResponseFormat); err != nil {
			return params, nil, err
		}
	}
	p.placeCache(&params)
	return params, extra, nil
}

func toolChoice(req *provider.Request, thinking bool) (sdk.ToolChoiceUnionParam, error) {
	var tc sdk.ToolChoiceUnionParam
	c := req.ToolChoice
	noParallel := req.ParallelToolCalls != nil && !*req.ParallelToolCalls && len(req.Tools) > 0
	switch c.Mode {
	case "", provider.ToolChoiceAuto:
		if noParallel {
			tc.OfAuto = &sdk.ToolChoiceAutoParam{DisableParallelToolUse: sdk.Bool(true)}
		}
	case provider.ToolChoiceNone:
		tc.OfNone = &sdk.ToolChoiceNoneParam{}
	case provider.ToolChoiceRequired:
		if len(req.Tools) == 0 {
			return tc, reqErr("tool choice %q with no tools offered", c.Mode)
		}
		if thinking {
			return tc, reqErr("tool choice %q cannot be used with thinking: the API takes only auto or none then", c.Mode)
		}
		tc.OfAny = &sdk.ToolChoiceAnyParam{}
		if noParallel {
			tc.OfAny.DisableParallelToolUse = sdk.Bool(true)
		}
	case provider.ToolChoiceTool:
		found := false
		for _, t := range req.Tools {
			found = found || t.Name == c.Name
		}
		if !found {
			return tc, reqErr("tool choice names %q, which is not among the tools offered", c.Name)
		}
		if thinking {
			return tc, reqErr("tool choice %q cannot be used with thinking: the API takes only auto or none then", c.Mode)
		}
		tc.OfTool = &sdk.ToolChoiceToolParam{Name: c.Name}
		if noParallel {
			tc.OfTool.DisableParallelToolUse = sdk.Bool(true)
		}
	default:
		return tc, reqErr("unknown tool choice mode %q", c.Mode)
	}
	return tc, nil
}

// tools maps the offered tools. Tools marked Deferred are sent with
// defer_loading, after the BM25 tool search tool, which the request then
// carries.
func tools(ts []tool.Tool) ([]sdk.ToolUnionParam, error) {
	out := make([]sdk.ToolUnionParam, 0, len(ts))
	var deferred []sdk.ToolUnionParam
	for _, t := range ts {
		schema := map[string]any{}
		if len(t.Schema) > 0 {
			if err := json.Unmarshal(t.Schema, &schema); err != nil {
				return nil, &RequestError{Turn: -1, Tool: t.Name, Reason: "the schema is not a JSON object", Err: err}
			}
		}
		if ty, ok := schema["type"]; ok && ty != "object" {
			return nil, &RequestError{Turn: -1, Tool: t.Name, Reason: fmt.Sprintf("the schema's type is %v; the API takes only objects", ty)}
		}
		in := sdk.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		if in.Properties == nil {
			in.Properties = map[string]any{}
		}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if s, ok := r.(string); ok {
					in.Required = append(in.Required, s)
				}
			}
		}
		for k, v := range schema {
			if k != "type" && k != "properties" && k != "required" {
				in.ExtraFields[k] = v
			}
		}
		tp := &sdk.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		if t.Deferred {
			tp.DeferLoading = sdk.Bool(true)
			deferred = append(deferred, sdk.ToolUnionParam{OfTool: tp})
			continue
		}
		out = append(out, sdk.ToolUnionParam{OfTool: tp})
	}
	if len(deferred) > 0 {
		// The server's own search finds deferred tools (see
		// x/tool/toolsearch's Native); it and the tools loaded from the
		// start come first, where the cache breakpoint goes.
		out = append(out, sdk.ToolUnionParam{OfToolSearchToolBm25_20251119: &sdk.ToolSearchToolBm25_20251119Param{
			Type: sdk.ToolSearchToolBm25_20251119TypeToolSearchToolBm25_20251119}})
		out = append(out, deferred...)
	}
	return out, nil
}

// messages maps the ledger to the system field and the message list.
// System turns, wherever they are, join the system field in order. Tool
// results and the user turns after them join one user message, tool results
// first, as the API requires; consecutive user turns join one message, and
// so do consecutive assistant turns. A turn with nothing to send (a user
// message an input guard stopped, an answer an output guard stopped) makes
// no message, and the turns on either side of it may then join.
func messages(turns []ledger.Turn) ([]sdk.TextBlockParam, []sdk.MessageParam, error) {
	var system []sdk.TextBlockParam
	var msgs []sdk.MessageParam
	add := func(user bool, blocks []sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(msgs); n > 0 && (msgs[n-1].OfUser != nil) == user {
			if user {
				msgs[n-1].OfUser.Content = append(msgs[n-1].OfUser.Content, blocks...)
			} else {
				msgs[n-1].OfAssistant.Content = append(msgs[n-1].OfAssistant.Content, blocks...)
			}
			return
		}
		if user {
			msgs = append(msgs, sdk.NewUserMessage(blocks...))
		} else {
			msgs = append(msgs, sdk.NewAssistantMessage(blocks...))
		}
	}
	for i, t := range turns {
		switch t.Role {
		case ledger.RoleSystem:
			for _, a := range t.Artifacts {
				switch a := artifact.Normalize(a).(type) {
				case artifact.Text:
					if a.Content != "" {
						system = append(system, sdk.TextBlockParam{Text: a.Content})
					}
				case artifact.Resource:
					if a.Text == "" {
						return nil, nil, turnErr(i, t.Role, "a system turn carries only text; resource %q has none", a.URI)
					}
					system = append(system, sdk.TextBlockParam{Text: resourceText(a)})
				case artifact.Summary:
					// A history policy puts a stored summary's text in the
					// request itself; the turns it covers are still here.
				case artifact.Opaque:
					// Only an answer's blocks are kept; none belong here.
				case artifact.Tripwire:
					// A guard's record, never the model's.
				default:
					return nil, nil, turnErr(i, t.Role, "a system turn carries only text, not %s", kindOf(a))
				}
			}
		case ledger.RoleUser:
			blocks, err := userBlocks(i, t)
			if err != nil {
				return nil, nil, err
			}
			add(true, blocks)
		case ledger.RoleTool:
			var blocks []sdk.ContentBlockParamUnion
			for _, a := range t.Artifacts {
				switch artifact.Normalize(a).(type) {
				case artifact.Pending, artifact.Decision, artifact.Tripwire:
					continue // approval and guard records: the results say what the model needs
				case artifact.Opaque:
					continue
				}
				r, ok := artifact.Normalize(a).(artifact.ToolResult)
				if !ok {
					return nil, nil, turnErr(i, t.Role, "a tool turn carries tool results, not %s", kindOf(a))
				}
				blocks = append(blocks, toolResult(r))
			}
			// Tool results lead their user message.
			if n := len(msgs); len(blocks) > 0 && n > 0 && msgs[n-1].OfUser != nil && !onlyToolResults(msgs[n-1].OfUser.Content) {
				return nil, nil, turnErr(i, t.Role, "tool results follow a user turn; they must answer the assistant turn before it")
			}
			add(true, blocks)
		case ledger.RoleAssistant:
			blocks, err := assistantBlocks(i, t)
			if err != nil {
				return nil, nil, err
			}
			add(false, blocks)
		default:
			return nil, nil, turnErr(i, t.Role, "unknown role")
		}
	}
	return system, trimFinalAssistant(msgs), nil
}

// trimFinalAssistant drops the trailing white space of a request's last
// message when it is an answer to carry on (an answer the server paused,
// artifact.FinishPauseTurn), which the API refuses, with the text block
// it leaves empty and the message if nothing is left of it.
func trimFinalAssistant(msgs []sdk.MessageParam) []sdk.MessageParam {
	n := len(msgs)
	if n == 0 || msgs[n-1].OfAssistant == nil {
		return msgs
	}
	content := msgs[n-1].OfAssistant.Content
	for len(content) > 0 {
		last := content[len(content)-1].OfText
		if last == nil {
			break
		}
		if last.Text = strings.TrimRightFunc(last.Text, unicode.IsSpace); last.Text != "" {
			break
		}
		content = content[:len(content)-1]
	}
	if len(content) == 0 {
		return msgs[:n-1]
	}
	msgs[n-1].OfAssistant.Content = content
	return msgs
}

func onlyToolResults(bs []sdk.ContentBlockParamUnion) bool {
	for _, b := range bs {
		if b.OfToolResult == nil {
			return false
		}
	}
	return true
}

func kindOf(a artifact.Artifact) string {
	if a == nil {
		return "a nil artifact"
	}
	return fmt.Sprintf("a %s artifact", a.Kind())
}

func userBlocks(i int, t ledger.Turn) ([]sdk.ContentBlockParamUnion, error) {
	var out []sdk.ContentBlockParamUnion
	for _, a := range t.Artifacts {
		switch a := artifact.Normalize(a).(type) {
		case artifact.Text:
			if a.Content != "" {
				out = append(out, sdk.NewTextBlock(a.Content))
			}
		case artifact.Image:
			b, err := imageBlock(a)
			if err != nil {
				return nil, turnErr(i, t.Role, "%s", err)
			}
			out = append(out, sdk.ContentBlockParamUnion{OfImage: b})
		case artifact.Resource:
			b, err := resourceBlock(a)
			if err != nil {
				return nil, turnErr(i, t.Role, "%s", err)
			}
			out = append(out, b)
		case artifact.ResourceLink:
			out = append(out, sdk.NewTextBlock(linkText(a)))
		case artifact.Summary:
			// Sent by a history policy as text, as in a system turn.
		case artifact.Opaque, artifact.Tripwire:
		default:
			return nil, turnErr(i, t.Role, "a user turn cannot carry %s", kindOf(a))
		}
	}
	return out, nil
}

// assistantBlocks keeps the turn's order, which is the order the server
// sent its blocks in: thinking stays ahead of the tool use it led to, a
// server tool's use and result stay where they were among the text.
// Reasoning without a signature or redacted data (from another server) is
// not sent: the API refuses thinking it cannot verify. Usage, Finish and a
// Tripwire are not sent, nor is another adapter's artifact.Opaque or the
// container an answer reported; an answer a guard stopped, which holds
// only such records, makes no message.
func assistantBlocks(i int, t ledger.Turn) ([]sdk.ContentBlockParamUnion, error) {
	var out []sdk.ContentBlockParamUnion
	text := -1 // the index in out of the block the previous artifact made, if text
	for _, a := range t.Artifacts {
		last := text
		text = -1
		switch a := artifact.Normalize(a).(type) {
		case artifact.Opaque:
			if a.Provider != opaqueProvider {
				continue
			}
			if a.Type == opaqueContainer {
				// It names the request's container (requestContainer);
				// the API takes no such block. Citations before it still
				// belong to the text before it.
				text = last
				continue
			}
			if a.Type == opaqueCitations {
				// Citations belong to the text before them; without it they
				// say nothing.
				if last >= 0 {
					if err := citeText(out[last].OfText, a.Data); err != nil {
						return nil, turnErr(i, t.Role, "%s", err)
					}
				}
				continue
			}
			b, err := opaqueParam(a)
			if err != nil {
				return nil, turnErr(i, t.Role, "%s", err)
			}
			out = append(out, b)
		case artifact.Reasoning:
			switch {
			case a.Field == fieldRedacted:
				out = append(out, sdk.NewRedactedThinkingBlock(a.Data))
			case a.Field == "" && a.Signature != "":
				out = append(out, sdk.NewThinkingBlock(a.Signature, a.Content))
			}
		case artifact.Text:
			if a.Content != "" {
				text = len(out)
				out = append(out, sdk.NewTextBlock(a.Content))
			}
		case artifact.ToolCall:
			out = append(out, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{
				ID: a.ID, Name: a.Name, Input: toolInput(a.Arguments),
			}})
		case artifact.Usage, artifact.Finish, artifact.Tripwire:
		default:
			return nil, turnErr(i, t.Role, "an assistant turn cannot carry %s", kindOf(a))
		}
	}
	return out, nil
}

// toolInput is a call's arguments as the API takes them, an object: the
// text as the model wrote it when it is one, else an empty object (the
// tool's result has already told the model what was wrong with it).
func toolInput(args string) json.RawMessage {
	b := []byte(strings.TrimSpace(args))
	if len(b) > 0 && b[0] == '{' && json.Valid(b) {
		return json.RawMessage(args)
	}
	return json.RawMessage(`{}`)
}

func toolResult(r artifact.ToolResult) sdk.ContentBlockParamUnion {
	tr := &sdk.ToolResultBlockParam{ToolUseID: r.ToolCallID}
	if r.IsError {
		tr.IsError = sdk.Bool(true)
	}
	if r.Content != "" {
		tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: r.Content}})
	}
	var notes []string
	for _, part := range r.Parts {
		switch a := artifact.Normalize(part).(type) {
		case artifact.Text:
			if r.Content == "" && a.Content != "" {
				tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: a.Content}})
			}
		case artifact.Image:
			if b, err := imageBlock(a); err == nil {
				tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfImage: b})
			} else if r.Content == "" {
				notes = append(notes, "["+err.Error()+"]")
			}
		case artifact.Resource:
			if b, err := resourceBlock(a); err == nil {
				switch {
				case b.OfDocument != nil:
					tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfDocument: b.OfDocument})
				case b.OfImage != nil:
					tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfImage: b.OfImage})
				}
			} else if r.Content == "" {
				notes = append(notes, "["+err.Error()+"]")
			}
		case artifact.ResourceLink:
			if r.Content == "" {
				notes = append(notes, linkText(a))
			}
		case artifact.Audio:
			if r.Content == "" {
				notes = append(notes, fmt.Sprintf("[audio %s, %d bytes — not shown: the API takes no audio]", orUnknown(a.MIMEType), len(a.Data)))
			}
		}
	}
	for _, n := range notes {
		tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: n}})
	}
	if len(tr.Content) == 0 {
		tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: emptyToolResult}})
	}
	return sdk.ContentBlockParamUnion{OfToolResult: tr}
}

var imageTypes = map[string]sdk.Base64ImageSourceMediaType{
	"image/jpeg": sdk.Base64ImageSourceMediaTypeImageJPEG,
	"image/png":  sdk.Base64ImageSourceMediaTypeImagePNG,
	"image/gif":  sdk.Base64ImageSourceMediaTypeImageGIF,
	"image/webp": sdk.Base64ImageSourceMediaTypeImageWebP,
}

func imageBlock(img artifact.Image) (*sdk.ImageBlockParam, error) {
	if len(img.Data) == 0 {
		if img.URL == "" {
			return nil, fmt.Errorf("an image has neither data nor a URL")
		}
		return &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfURL: &sdk.URLImageSourceParam{URL: img.URL}}}, nil
	}
	mt, ok := imageTypes[strings.ToLower(img.MIMEType)]
	if !ok {
		return nil, fmt.Errorf("image %s, %d bytes — not shown: the API takes JPEG, PNG, GIF and WebP", orUnknown(img.MIMEType), len(img.Data))
	}
	return &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{
		Data: base64.StdEncoding.EncodeToString(img.Data), MediaType: mt,
	}}}, nil
}

// resourceBlock sends a text resource as a plain-text document, a PDF as a
// PDF document and an image as an image; other binaries are refused.
func resourceBlock(r artifact.Resource) (sdk.ContentBlockParamUnion, error) {
	mt := strings.ToLower(r.MIMEType)
	switch {
	case r.Text != "" || (len(r.Blob) == 0 && !strings.HasPrefix(mt, "application/pdf")):
		return sdk.ContentBlockParamUnion{OfDocument: &sdk.DocumentBlockParam{
			Source: sdk.DocumentBlockParamSourceUnion{OfText: &sdk.PlainTextSourceParam{Data: r.Text}},
			Title:  sdk.String(r.URI),
		}}, nil
	case mt == "application/pdf":
		return sdk.ContentBlockParamUnion{OfDocument: &sdk.DocumentBlockParam{
			Source: sdk.DocumentBlockParamSourceUnion{OfBase64: &sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(r.Blob)}},
			Title:  sdk.String(r.URI),
		}}, nil
	case imageTypes[mt] != "":
		b, err := imageBlock(artifact.Image{MIMEType: mt, Data: r.Blob})
		return sdk.ContentBlockParamUnion{OfImage: b}, err
	}
	return sdk.ContentBlockParamUnion{}, fmt.Errorf("resource %s (%s, %d bytes) — not shown: the API takes text, PDF and images", r.URI, orUnknown(r.MIMEType), len(r.Blob))
}

func resourceText(r artifact.Resource) string { return r.URI + ":\n" + r.Text }

func linkText(l artifact.ResourceLink) string {
	s := "[resource " + l.URI
	if l.Name != "" {
		s += " (" + l.Name + ")"
	}
	return s + "]"
}

func orUnknown(mime string) string {
	if mime == "" {
		return "of unknown type"
	}
	return mime
}

// placeCache marks the cache breakpoints the provider's CacheMode asks
// for, at most the API's four.
func (p *Provider) placeCache(params *sdk.MessageNewParams) {
	if p.cache == CacheOff {
		return
	}
	cc := sdk.NewCacheControlEphemeralParam()
	if p.cacheTTL == time.Hour {
		cc.TTL = sdk.CacheControlEphemeralTTLTTL1h
	}
	// The last tool sent in the prompt: deferred tools are not.
	for i := len(params.Tools) - 1; i >= 0; i-- {
		t := &params.Tools[i]
		if t.OfToolSearchToolBm25_20251119 != nil {
			t.OfToolSearchToolBm25_20251119.CacheControl = cc
			break
		}
		if t.OfTool != nil && !t.OfTool.DeferLoading.Value {
			t.OfTool.CacheControl = cc
			break
		}
		if t.OfTool == nil {
			break
		}
	}
	if n := len(params.System); n > 0 {
		params.System[n-1].CacheControl = cc
	}
	if p.cache != CacheAuto {
		return
	}
	// The newest message writes the prefix for the next turn to read; the
	// user message before it is where the previous turn wrote, so that a
	// prefix longer than the API's lookback still hits.
	msgs := params.Messages
	marked := 0
	for i := len(msgs) - 1; i >= 0 && marked < 2; i-- {
		if marked == 1 && msgs[i].OfUser == nil {
			continue
		}
		if markLast(msgs[i], cc) {
			marked++
		}
	}
}

// markLast sets cc on the last block of m that takes one (thinking does
// not).
func markLast(m sdk.MessageParam, cc sdk.CacheControlEphemeralParam) bool {
	var blocks []sdk.ContentBlockParamUnion
	switch {
	case m.OfUser != nil:
		blocks = m.OfUser.Content
	case m.OfAssistant != nil:
		blocks = m.OfAssistant.Content
	}
	for j := len(blocks) - 1; j >= 0; j-- {
		if blocks[j].OfThinking != nil || blocks[j].OfRedactedThinking != nil {
			continue
		}
		if c := blocks[j].GetCacheControl(); c != nil {
			*c = cc
			return true
		}
	}
	return false
}
