package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/tool"
)

// toResult maps an MCP tool result into a tool.Result. Text and the text
// of embedded resources go to Content, in order; images, audio, binary
// resources and resource links become artifact.Image, Audio, Resource and
// ResourceLink parts, each also noted in Content in brackets so that a
// model reading only text knows it is there. Structured content becomes
// Value.
func toResult(res *sdk.CallToolResult) *tool.Result {
	out := &tool.Result{IsError: res.IsError}
	var text []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			text = append(text, c.Text)
		case *sdk.ImageContent:
			out.Parts = append(out.Parts, artifact.Image{MIMEType: c.MIMEType, Data: c.Data})
			text = append(text, fmt.Sprintf("[image %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.AudioContent:
			out.Parts = append(out.Parts, artifact.Audio{MIMEType: c.MIMEType, Data: c.Data})
			text = append(text, fmt.Sprintf("[audio %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
			case r.Blob == nil:
				text = append(text, r.Text)
			default:
				out.Parts = append(out.Parts, artifact.Resource{URI: r.URI, MIMEType: r.MIMEType, Blob: r.Blob})
				text = append(text, fmt.Sprintf("[resource %s (%s), %d bytes]", r.URI, orUnknown(r.MIMEType), len(r.Blob)))
			}
		case *sdk.ResourceLink:
			out.Parts = append(out.Parts, artifact.ResourceLink{URI: c.URI, Name: c.Name,
				Title: c.Title, Description: c.Description, MIMEType: c.MIMEType, Size: c.Size})
			note := "[resource link " + c.URI
			if c.Name != "" {
				note += " (" + c.Name + ")"
			}
			if c.Description != "" {
				note += ": " + c.Description
			}
			text = append(text, note+"]")
		default:
			raw, _ := json.Marshal(c)
			text = append(text, string(raw))
		}
	}
	out.Content = strings.Join(text, "\n")
	if res.StructuredContent != nil {
		out.Value = res.StructuredContent
	}
	return out
}

func orUnknown(mime string) string {
	if mime == "" {
		return "of unknown type"
	}
	return mime
}

// toCallResult maps what the Handler produced into an MCP tool result:
// the text first, then one content item per part, and the structured
// value when the tool returned a JSON object.
func toCallResult(res artifact.ToolResult) *sdk.CallToolResult {
	out := &sdk.CallToolResult{IsError: res.IsError, Content: make([]sdk.Content, 0, 1+len(res.Parts))}
	if res.Content != "" || len(res.Parts) == 0 {
		out.Content = append(out.Content, &sdk.TextContent{Text: res.Content})
	}
	for _, p := range res.Parts {
		if c := partContent(p); c != nil {
			out.Content = append(out.Content, c)
		}
	}
	if !res.IsError {
		out.StructuredContent = structured(res)
	}
	return out
}

func partContent(p artifact.Artifact) sdk.Content {
	switch p := p.(type) {
	case artifact.Text:
		return &sdk.TextContent{Text: p.Content}
	case artifact.Image:
		if p.Data == nil && p.URL != "" {
			return &sdk.ResourceLink{URI: p.URL, Name: "image", MIMEType: p.MIMEType}
		}
		return &sdk.ImageContent{MIMEType: p.MIMEType, Data: p.Data}
	case artifact.Audio:
		return &sdk.AudioContent{MIMEType: p.MIMEType, Data: p.Data}
	case artifact.Resource:
		return &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: p.URI, MIMEType: p.MIMEType, Text: p.Text, Blob: p.Blob}}
	case artifact.ResourceLink:
		return &sdk.ResourceLink{URI: p.URI, Name: p.Name, Title: p.Title, Description: p.Description, MIMEType: p.MIMEType, Size: p.Size}
	case artifact.Unknown:
		return &sdk.TextContent{Text: string(p.Raw)}
	case nil:
		return nil
	}
	raw, err := artifact.Marshal(p)
	if err != nil {
		return &sdk.TextContent{Text: fmt.Sprintf("[%s part that cannot be encoded: %v]", p.Kind(), err)}
	}
	return &sdk.TextContent{Text: string(raw)}
}

// structured returns the tool's value as MCP structured content when it is
// a JSON object, or nil.
func structured(res artifact.ToolResult) any {
	var v any
	switch r := res.Value.(type) {
	case nil, string, []byte:
		return nil
	case *tool.Result:
		if r == nil {
			return nil
		}
		v = r.Value
	case tool.Result:
		v = r.Value
	default:
		// Content is already the value's JSON unless it was cut.
		if !res.Truncated && strings.HasPrefix(res.Content, "{") && json.Valid([]byte(res.Content)) {
			return json.RawMessage(res.Content)
		}
		return nil
	}
	switch v := v.(type) {
	case nil, string:
		return nil
	case map[string]any:
		return v
	}
	raw, err := json.Marshal(v)
	if err != nil || !bytes.HasPrefix(raw, []byte("{")) {
		return nil
	}
	return json.RawMessage(raw)
}

// fromSDKTool describes a server's tool to lode. MCP's annotation defaults
// apply: a tool that is not read-only is destructive unless it says
// otherwise, and every tool is open-world unless it says otherwise.
func fromSDKTool(t *sdk.Tool) (tool.Tool, error) {
	out := tool.Tool{Name: t.Name, Description: t.Description, Title: t.Title}
	if out.Description == "" {
		out.Description = t.Title
	}
	if t.InputSchema != nil {
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			return tool.Tool{}, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
		}
		out.Schema = raw
	}
	if t.OutputSchema != nil {
		raw, err := json.Marshal(t.OutputSchema)
		if err != nil {
			return tool.Tool{}, fmt.Errorf("tool %q: output schema: %w", t.Name, err)
		}
		out.OutputSchema = raw
	}
	out.Hints = tool.Hints{Destructive: true, OpenWorld: true}
	if a := t.Annotations; a != nil {
		raw, err := json.Marshal(a)
		if err != nil {
			return tool.Tool{}, fmt.Errorf("tool %q: annotations: %w", t.Name, err)
		}
		out.Annotations = raw
		if out.Description == "" {
			out.Description = a.Title
		}
		out.Hints.ReadOnly = a.ReadOnlyHint
		out.Hints.Idempotent = a.IdempotentHint
		out.Hints.Destructive = !a.ReadOnlyHint && (a.DestructiveHint == nil || *a.DestructiveHint)
		out.Hints.OpenWorld = a.OpenWorldHint == nil || *a.OpenWorldHint
	}
	return out, nil
}

// toSDKTool describes a registry tool to MCP clients, with its title and
// output schema. A tool mounted from another MCP server is described with
// the annotations that server gave it, as it gave them. Otherwise hints
// lode does not set are left out rather than claimed false, except that a
// read-only tool is plainly not destructive.
func toSDKTool(t tool.Tool) *sdk.Tool {
	schema := t.Schema
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	out := &sdk.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema}
	if len(bytes.TrimSpace(t.OutputSchema)) > 0 {
		out.OutputSchema = t.OutputSchema
	}
	if len(bytes.TrimSpace(t.Annotations)) > 0 {
		var a sdk.ToolAnnotations
		if err := json.Unmarshal(t.Annotations, &a); err == nil {
			out.Annotations = &a
			return out
		}
	}
	h := t.Hints
	// Flow labels are lode's own: MCP has no annotation for them.
	if (tool.Hints{ReadOnly: h.ReadOnly, Destructive: h.Destructive, Idempotent: h.Idempotent, OpenWorld: h.OpenWorld}) != (tool.Hints{}) {
		a := &sdk.ToolAnnotations{ReadOnlyHint: h.ReadOnly, IdempotentHint: h.Idempotent}
		switch {
		case h.Destructive:
			a.DestructiveHint = ptr(true)
		case h.ReadOnly:
			a.DestructiveHint = ptr(false)
		}
		if h.OpenWorld {
			a.OpenWorldHint = ptr(true)
		}
		out.Annotations = a
	}
	return out
}

func ptr[T any](v T) *T { return &v }
