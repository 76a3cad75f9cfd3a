package capture

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// Message is one message in the conventions' structured form: a role and
// its parts. FinishReason is set on output messages only.
type Message struct {
	Role         string `json:"role"`
	Parts        []Part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// Part is one part of a message. Type is "text" or "reasoning" (Content),
// "tool_call" (ID, Name, Arguments), "tool_call_response" (ID, Response),
// "uri" (Modality, MIMEType, URI) or "blob" (Modality, MIMEType, Content
// in base64).
type Part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  any    `json:"response,omitempty"`
	Modality  string `json:"modality,omitempty"`
	MIMEType  string `json:"mime_type,omitempty"`
	URI       string `json:"uri,omitempty"`
}

// MarshalJSON writes the fields of p's type, those the conventions
// require present even when empty.
func (p Part) MarshalJSON() ([]byte, error) {
	switch p.Type {
	case "tool_call":
		return json.Marshal(struct {
			Type      string `json:"type"`
			ID        string `json:"id,omitempty"`
			Name      string `json:"name"`
			Arguments any    `json:"arguments"`
		}{p.Type, p.ID, p.Name, p.Arguments})
	case "tool_call_response":
		return json.Marshal(struct {
			Type     string `json:"type"`
			ID       string `json:"id,omitempty"`
			Response any    `json:"response"`
		}{p.Type, p.ID, p.Response})
	case "uri":
		return json.Marshal(struct {
			Type     string `json:"type"`
			Modality string `json:"modality"`
			MIMEType string `json:"mime_type,omitempty"`
			URI      string `json:"uri"`
		}{p.Type, p.Modality, p.MIMEType, p.URI})
	case "blob":
		return json.Marshal(struct {
			Type     string `json:"type"`
			Modality string `json:"modality"`
			MIMEType string `json:"mime_type,omitempty"`
			Content  string `json:"content"`
		}{p.Type, p.Modality, p.MIMEType, p.Content})
	}
	return json.Marshal(struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}{p.Type, p.Content})
}

// Input splits turns into the system instructions and the messages the
// model is sent, in the structured form. Tripwires and turns left with
// no part are skipped.
func Input(turns []ledger.Turn) (system []Part, msgs []Message) {
	for _, t := range turns {
		parts := Parts(t.Artifacts)
		if len(parts) == 0 {
			continue
		}
		if t.Role == ledger.RoleSystem {
			system = append(system, parts...)
			continue
		}
		msgs = append(msgs, Message{Role: string(t.Role), Parts: parts})
	}
	return system, msgs
}

// Output is the message a model answered with: its whole artifacts (not
// deltas), with the Finish reason ("stop" when there is none).
func Output(arts []artifact.Artifact) Message {
	m := Message{Role: string(ledger.RoleAssistant), Parts: Parts(arts), FinishReason: "stop"}
	for _, a := range arts {
		if f, ok := a.(artifact.Finish); ok && f.Reason != "" {
			m.FinishReason = finishReason(f.Reason)
		}
	}
	if m.Parts == nil {
		m.Parts = []Part{}
	}
	return m
}

// finishReason is lode's reason in the conventions' words where they have
// one ("tool_call" for "tool_calls"); others pass as they are.
func finishReason(r string) string {
	if r == "tool_calls" {
		return "tool_call"
	}
	return r
}

// Parts is arts in the structured form; artifacts that are not content
// (usage, finish, deltas, tripwires) are left out.
func Parts(arts []artifact.Artifact) []Part {
	var out []Part
	for _, a := range arts {
		switch a := a.(type) {
		case artifact.Text:
			out = append(out, Part{Type: "text", Content: a.Content})
		case artifact.Summary:
			out = append(out, Part{Type: "text", Content: a.Content})
		case artifact.Reasoning:
			if a.Content != "" {
				out = append(out, Part{Type: "reasoning", Content: a.Content})
			}
		case artifact.ToolCall:
			out = append(out, Part{Type: "tool_call", ID: a.ID, Name: a.Name, Arguments: Arguments(a.Arguments)})
		case artifact.ToolResult:
			out = append(out, Part{Type: "tool_call_response", ID: a.ToolCallID, Response: a.Content})
		case artifact.Image:
			out = append(out, media("image", a.URL, a.MIMEType, a.Data))
		case artifact.Audio:
			out = append(out, media("audio", "", a.MIMEType, a.Data))
		case artifact.Resource:
			if a.Text != "" {
				out = append(out, Part{Type: "text", Content: a.Text})
			} else {
				out = append(out, media("", a.URI, a.MIMEType, nil))
			}
		case artifact.ResourceLink:
			out = append(out, media("", a.URI, a.MIMEType, nil))
		}
	}
	return out
}

// media is a part that is not text; modality is the MIME type's first
// word when the artifact does not say ("application" for a PDF).
func media(modality, uri, mime string, data []byte) Part {
	if modality == "" {
		modality, _, _ = strings.Cut(mime, "/")
		if modality == "" {
			modality = "unknown"
		}
	}
	if uri != "" {
		return Part{Type: "uri", Modality: modality, MIMEType: mime, URI: uri}
	}
	return Part{Type: "blob", Modality: modality, MIMEType: mime, Content: base64.StdEncoding.EncodeToString(data)}
}

// Arguments is a tool call's arguments as the structured form carries
// them: the JSON value when the model wrote valid JSON, else the text.
func Arguments(s string) any {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return s
}

// TruncatedMarker ends a text cut to fit Config.MaxBytes; the count is the
// bytes left out.
const TruncatedMarker = "…[truncated %d bytes]"

// Attr is v (messages, parts, or a tool's arguments or result) as the
// JSON text of an attribute: secrets scrubbed, valid UTF-8, and within
// c's bound, its longest texts cut with TruncatedMarker so the JSON stays
// valid.
func (c Config) Attr(v any) string {
	s := c.encode(v)
	limit := c.limit()
	if len(s) <= limit {
		return s
	}
	// Cut every text longer than a share of the bound, and shrink the share
	// until the whole fits or nothing more can go.
	for share := limit / 2; share >= 32; share /= 2 {
		if t := c.encode(cut(v, share)); len(t) <= limit {
			return t
		}
	}
	t := c.encode(cut(v, 16))
	if len(t) <= limit {
		return t
	}
	// Too many parts to fit: a JSON string saying so.
	b, _ := json.Marshal(fmt.Sprintf(TruncatedMarker, len(s)))
	return string(b)
}

func (c Config) encode(v any) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		b.Reset()
		_ = json.NewEncoder(&b).Encode(fmt.Sprint(v))
	}
	return c.scrub(strings.ToValidUTF8(strings.TrimSuffix(b.String(), "\n"), "\uFFFD"))
}

// cut is v with every string longer than n bytes cut to n and marked.
func cut(v any, n int) any {
	switch v := v.(type) {
	case string:
		return cutText(v, n)
	case json.RawMessage:
		if len(v) > n {
			return cutText(string(v), n)
		}
		return v
	case []Message:
		out := make([]Message, len(v))
		for i, m := range v {
			out[i] = m
			out[i].Parts = cut(m.Parts, n).([]Part)
		}
		return out
	case Message:
		v.Parts = cut(v.Parts, n).([]Part)
		return v
	case []Part:
		out := make([]Part, len(v))
		for i, p := range v {
			p.Content = cutText(p.Content, n)
			p.Arguments = cut(p.Arguments, n)
			p.Response = cut(p.Response, n)
			out[i] = p
		}
		return out
	}
	return v
}

func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := n
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + fmt.Sprintf(TruncatedMarker, len(s)-k)
}
