package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/lodeworks/lode/artifact"
)

// What this package keeps as artifact.Opaque: Provider is opaqueProvider;
// Type is the block's type (server_tool_use, web_search_tool_result,
// code_execution_tool_result, ...) with Data the whole block, or
// opaqueCitations with Data the JSON array of the citations of the Text
// just before it.
const (
	opaqueProvider  = "anthropic"
	opaqueCitations = "citations"
)

// hasElements reports whether raw is a JSON array with something in it.
func hasElements(raw string) bool {
	s := strings.TrimSpace(raw)
	if len(s) < 2 || s[0] != '[' {
		return false
	}
	return strings.TrimSpace(s[1:len(s)-1]) != ""
}

// joinCitations makes one JSON array of a text block's citations: a
// whole array given alone is kept as it came; arrays and single citations
// (as citations_delta events stream them) are joined in order.
func joinCitations(parts []string) string {
	if len(parts) == 1 && strings.HasPrefix(strings.TrimSpace(parts[0]), "[") {
		return parts[0]
	}
	var b strings.Builder
	b.WriteByte('[')
	n := 0
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if strings.HasPrefix(p, "[") {
			p = strings.TrimSpace(p[1 : len(p)-1])
		}
		if p == "" {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p)
		n++
	}
	b.WriteByte(']')
	return b.String()
}

// opaqueBlock is a block this package does not map, whole: as the server
// sent it, with its input put in when it was streamed.
func opaqueBlock(b *block) (artifact.Opaque, error) {
	data := b.raw
	if !json.Valid([]byte(data)) || !strings.HasPrefix(strings.TrimSpace(data), "{") {
		return artifact.Opaque{}, respErr(ErrMalformed, fmt.Sprintf("the %s block is not a JSON object", b.typ), []byte(data), nil)
	}
	if b.gotArgs {
		input := b.args.String()
		if strings.TrimSpace(input) == "" {
			input = "{}"
		}
		if !json.Valid([]byte(input)) {
			return artifact.Opaque{}, respErr(ErrMalformed, fmt.Sprintf("the input of the %s block is not JSON", b.typ), []byte(input), nil)
		}
		var err error
		if data, err = setMember(data, "input", input); err != nil {
			return artifact.Opaque{}, respErr(ErrMalformed, fmt.Sprintf("the %s block: %v", b.typ, err), []byte(data), nil)
		}
	}
	return artifact.Opaque{Provider: opaqueProvider, Type: b.typ, Data: data}, nil
}

// setMember replaces the value of the top-level member key of the JSON
// object obj with value, leaving every other byte as it was; a member not
// there is added at the end.
func setMember(obj, key, value string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return "", err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return "", err
		}
		if k, _ := t.(string); k == key {
			end := int(dec.InputOffset())
			start := end - len(raw)
			return obj[:start] + value + obj[end:], nil
		}
	}
	end := strings.LastIndexByte(obj, '}')
	head := strings.TrimRight(obj[:end], " \t\r\n")
	sep := ","
	if strings.HasSuffix(head, "{") {
		sep = ""
	}
	k, _ := json.Marshal(key)
	return head + sep + string(k) + ":" + value + obj[end:], nil
}

// opaqueParam is a kept block as a request block: its JSON as it came.
func opaqueParam(o artifact.Opaque) (sdk.ContentBlockParamUnion, error) {
	d := bytes.TrimSpace([]byte(o.Data))
	if len(d) == 0 || d[0] != '{' || !json.Valid(d) {
		return sdk.ContentBlockParamUnion{}, fmt.Errorf("the kept %s block is not a JSON object", o.Type)
	}
	return param.Override[sdk.ContentBlockParamUnion](json.RawMessage(o.Data)), nil
}

// citeText puts citations, kept as they came, on a text block.
func citeText(t *sdk.TextBlockParam, citations string) error {
	d := bytes.TrimSpace([]byte(citations))
	if len(d) == 0 || d[0] != '[' || !json.Valid(d) {
		return fmt.Errorf("the kept citations are not a JSON array")
	}
	t.SetExtraFields(map[string]any{"citations": json.RawMessage(citations)})
	return nil
}
