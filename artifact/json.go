package artifact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Unknown is an artifact of a kind this version of lode does not know, read
// from storage. Raw is the whole encoded artifact, kind included; Marshal
// writes it back byte for byte. Nested in a List that encoding/json
// encodes (a ToolResult's Parts, a ledger turn), it comes out compacted and
// with <, > and & escaped, as encoding/json writes every embedded JSON
// value: the same JSON value, not the same bytes.
type Unknown struct {
	Type string
	Raw  json.RawMessage
}

// Kind returns the kind recorded in storage.
func (u Unknown) Kind() string { return u.Type }

// Marshal encodes a as a JSON object whose "kind" member names its type,
// followed by the artifact's own fields.
func Marshal(a Artifact) ([]byte, error) {
	if a = Normalize(a); a == nil {
		return nil, errors.New("artifact: marshal nil artifact")
	}
	switch a := a.(type) {
	case Unknown:
		if !json.Valid(a.Raw) {
			return nil, fmt.Errorf("artifact: unknown kind %q holds invalid JSON", a.Type)
		}
		return append([]byte(nil), a.Raw...), nil
	case Reasoning:
		// A comma in Field reads back as the older two-name form, so the
		// value would not come back as it went.
		if strings.Contains(a.Field, ",") || strings.Contains(a.ContentField, ",") {
			return nil, fmt.Errorf("artifact: marshal reasoning: field %q, content field %q: each holds one name, without a comma", a.Field, a.ContentField)
		}
	}
	body, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("artifact: marshal %s: %w", a.Kind(), err)
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("artifact: %s does not encode as a JSON object", a.Kind())
	}
	kind, _ := json.Marshal(a.Kind())
	out := make([]byte, 0, len(body)+len(kind)+10)
	out = append(out, `{"kind":`...)
	out = append(out, kind...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// Unmarshal decodes an artifact written by Marshal. A kind it does not know
// becomes an Unknown holding data unchanged.
func Unmarshal(data []byte) (Artifact, error) {
	kind, ok := leadingKind(data)
	if !ok {
		var head struct {
			Kind *string `json:"kind"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return nil, fmt.Errorf("artifact: %w", err)
		}
		if head.Kind == nil {
			return nil, errors.New(`artifact: object has no "kind"`)
		}
		kind = *head.Kind
	}
	switch kind {
	case KindText:
		return decode[Text](data)
	case KindReasoning:
		return decode[Reasoning](data)
	case KindToolCall:
		return decode[ToolCall](data)
	case KindToolResult:
		return decode[ToolResult](data)
	case KindUsage:
		return decode[Usage](data)
	case KindImage:
		return decode[Image](data)
	case KindFinish:
		return decode[Finish](data)
	case KindAudio:
		return decode[Audio](data)
	case KindResource:
		return decode[Resource](data)
	case KindResourceLink:
		return decode[ResourceLink](data)
	case KindSummary:
		return decode[Summary](data)
	case KindTextDelta:
		return decode[TextDelta](data)
	case KindReasoningDelta:
		return decode[ReasoningDelta](data)
	case KindToolCallDelta:
		return decode[ToolCallDelta](data)
	case KindPending:
		return decode[Pending](data)
	case KindDecision:
		return decode[Decision](data)
	case KindOpaque:
		return decode[Opaque](data)
	case KindTripwire:
		return decode[Tripwire](data)
	}
	if ok && !json.Valid(data) {
		return nil, errors.New("artifact: invalid JSON")
	}
	return Unknown{Type: kind, Raw: bytes.Clone(data)}, nil
}

// leadingKind reads the kind from data in the form Marshal writes, where
// it leads the object, so that decoding takes one pass. It reports false
// for any other form, which is then decoded in full.
func leadingKind(data []byte) (string, bool) {
	const prefix = `{"kind":"`
	if !bytes.HasPrefix(data, []byte(prefix)) {
		return "", false
	}
	rest := data[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}

func decode[T Artifact](data []byte) (Artifact, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("artifact: decode %s: %w", v.Kind(), err)
	}
	if n, ok := any(&v).(interface{ normalize() }); ok {
		n.normalize()
	}
	return v, nil
}

// An empty byte field that Marshal omits decodes as nil, so that a value
// decoded once survives any number of round trips unchanged.
func (i *Image) normalize() {
	if len(i.Data) == 0 {
		i.Data = nil
	}
}

func (r *Resource) normalize() {
	if len(r.Blob) == 0 {
		r.Blob = nil
	}
}

// reasoningJSON is Reasoning without its methods, for UnmarshalJSON.
type reasoningJSON Reasoning

// UnmarshalJSON reads the form Marshal writes and the older one, in which
// Field held two names joined by a comma, the text's place first and the
// data's second (the OpenAI adapter wrote "reasoning_content,reasoning_details"
// for Kimi behind a gateway). The first name becomes ContentField and the
// second Field, so that a stored thread goes back to the server as it did.
func (r *Reasoning) UnmarshalJSON(data []byte) error {
	var v reasoningJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if text, rest, ok := strings.Cut(v.Field, ","); ok {
		if v.ContentField != "" || text == "" || rest == "" || strings.Contains(rest, ",") {
			return fmt.Errorf("field %q is neither one name nor the older pair of names (content field %q)", v.Field, v.ContentField)
		}
		v.ContentField, v.Field = text, rest
	}
	if strings.Contains(v.ContentField, ",") {
		return fmt.Errorf("content field %q holds more than one name", v.ContentField)
	}
	*r = Reasoning(v)
	return nil
}

// Normalize returns a as the loop, the ledger and Marshal expect it: nil
// for a nil interface or a nil pointer, the value a points to when a is a
// pointer to an artifact value type (a provider that yields
// &artifact.ToolCall{...} means the ToolCall), and a itself otherwise.
func Normalize(a Artifact) Artifact {
	if a == nil {
		return nil
	}
	v := reflect.ValueOf(a)
	if v.Kind() != reflect.Pointer {
		return a
	}
	if v.IsNil() {
		return nil
	}
	if e, ok := v.Elem().Interface().(Artifact); ok {
		return e
	}
	return a
}

// List is a sequence of artifacts that encodes as a JSON array of
// kind-tagged objects.
type List []Artifact

// MarshalJSON encodes each artifact with Marshal.
func (l List) MarshalJSON() ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, 64*len(l)+2))
	buf.WriteByte('[')
	for i, a := range l {
		if i > 0 {
			buf.WriteByte(',')
		}
		b, err := Marshal(a)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// UnmarshalJSON decodes each element with Unmarshal.
func (l *List) UnmarshalJSON(data []byte) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return fmt.Errorf("artifact: list: %w", err)
	}
	if len(raws) == 0 {
		// Marshal omits an empty list where it can; reading one back as nil
		// keeps round trips exact.
		*l = nil
		return nil
	}
	out := make(List, len(raws))
	for i, r := range raws {
		a, err := Unmarshal(r)
		if err != nil {
			return fmt.Errorf("artifact: list element %d: %w", i, err)
		}
		out[i] = a
	}
	*l = out
	return nil
}
