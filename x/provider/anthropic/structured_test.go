package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

func TestStructuredOutputsByModel(t *testing.T) {
	for model, want := range map[string]bool{
		"claude-sonnet-4-5":                          true,
		"claude-sonnet-4-5-20250929":                 true,
		"claude-opus-4-5-20251101":                   true,
		"claude-haiku-4-5":                           true,
		"claude-sonnet-4-6":                          true,
		"claude-opus-4-7":                            true,
		"claude-opus-5":                              true,
		"claude-sonnet-5-5":                          true,
		"claude-mythos-5-2":                          true,
		"claude-fable-5":                             true,
		"anthropic/claude-sonnet-4-5":                true,
		"anthropic.claude-haiku-4-5-20251001-v1:0":   true,
		"claude-opus-4-6@20260101":                   true,
		"us.anthropic.claude-opus-4-5-20251101-v1:0": true,
		"claude-opus-4-1":                            false,
		"claude-opus-4-1-20250805":                   false,
		"claude-sonnet-4-20250514":                   false,
		"claude-opus-4-0":                            false,
		"claude-3-7-sonnet-latest":                   false,
		"claude-3-5-haiku-20241022":                  false,
		"claude-haiku-3":                             false,
		"claude-mythos-preview":                      false,
		"my-gateway-alias":                           false,
		"":                                           false,
		"claude-":                                    false,
		"CLAUDE-SONNET-4-5":                          true,
	} {
		if got := StructuredOutputs(model); got != want {
			t.Errorf("StructuredOutputs(%q) = %v, want %v", model, got, want)
		}
	}
}

func TestSupportsResponseFormat(t *testing.T) {
	for _, c := range []struct {
		model      string
		opt        []Option
		schema, ob bool
	}{
		{"claude-sonnet-4-5", nil, true, false},
		{"claude-3-7-sonnet-latest", nil, false, false},
		{"claude-3-7-sonnet-latest", []Option{WithStructuredOutputs(true)}, true, false},
		{"claude-sonnet-4-5", []Option{WithStructuredOutputs(false)}, false, false},
	} {
		p, err := New(append([]Option{WithModel(c.model), WithAPIKey("k")}, c.opt...)...)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.SupportsResponseFormat(provider.ResponseFormatJSONSchema); got != c.schema {
			t.Errorf("%s %d options: json_schema %v", c.model, len(c.opt), got)
		}
		if got := p.SupportsResponseFormat(provider.ResponseFormatJSONObject); got != c.ob {
			t.Errorf("%s: json_object %v", c.model, got)
		}
	}
}

// The response format goes out as output_config.format, the schema
// rewritten to what structured outputs take, its members in order.
func TestResponseFormatOnTheWire(t *testing.T) {
	f := newFake(t, textAnswer(`{"name":"Ann","age":3}`))
	p := f.provider(t)
	schema := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"name":{"type":"string","minLength":1,"format":"idn-email"},"age":{"type":"integer","minimum":0,"maximum":150,"description":"years"},"tags":{"type":"array","items":{"type":"string"},"minItems":2,"maxItems":5},"kind":{"oneOf":[{"type":"string","enum":["a","b"]},{"type":"null"}]}},"required":["name","age"]}`
	_, whole, err := collect(p, &provider.Request{
		Turns:          []ledger.Turn{userTurn("who?")},
		ResponseFormat: &provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Name: "person", Description: "The person named.", Schema: json.RawMessage(schema)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) == 0 {
		t.Fatal("no answer")
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal([]byte(f.raw[0]), &body); err != nil {
		t.Fatal(err)
	}
	want := `{"format":{"schema":{"additionalProperties":false,"description":"The person named.","properties":{"name":{"type":"string","description":"(minLength: 1; format: idn-email)"},"age":{"type":"integer","description":"years (minimum: 0; maximum: 150)"},"tags":{"type":"array","items":{"type":"string"},"description":"(minItems: 2; maxItems: 5)"},"kind":{"anyOf":[{"type":"string","enum":["a","b"]},{"type":"null"}]}},"required":["name","age"],"type":"object"},"type":"json_schema"}}`
	if got := string(body["output_config"]); got != want {
		t.Errorf("output_config =\n%s\nwant\n%s", got, want)
	}
	if h := f.headers[0].Get("Anthropic-Beta"); h != "" {
		t.Errorf("a beta header was sent: %q", h)
	}
}

func TestResponseFormatRefused(t *testing.T) {
	obj := func(s string) *provider.ResponseFormat {
		return &provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Schema: json.RawMessage(s)}
	}
	for _, c := range []struct {
		name   string
		model  string
		format *provider.ResponseFormat
		want   string
	}{
		{"json object", "claude-sonnet-4-5", &provider.ResponseFormat{Type: provider.ResponseFormatJSONObject},
			`anthropic: request: response format "json_object": the Messages API takes only a schema ("json_schema")`},
		{"unknown type", "claude-sonnet-4-5", &provider.ResponseFormat{Type: "xml"},
			`anthropic: request: unknown response format type "xml"; use "json_schema"`},
		{"old model", "claude-3-7-sonnet-latest", obj(`{"type":"object","properties":{}}`),
			`anthropic: request: model "claude-3-7-sonnet-latest" is not known to take structured outputs (Claude 4.5 and later do): use WithStructuredOutputs(true) to send them anyway, or a final-answer tool (x/output's ModeTool)`},
		{"no schema", "claude-sonnet-4-5", obj(``),
			`anthropic: request: response format schema: at the root: there is no schema`},
		{"not JSON", "claude-sonnet-4-5", obj(`{"type":`),
			`anthropic: request: response format schema: at the root: the schema is not valid JSON: unexpected EOF`},
		{"trailing", "claude-sonnet-4-5", obj(`{} {}`),
			`anthropic: request: response format schema: at the root: the schema is not valid JSON: text after the schema`},
		{"array", "claude-sonnet-4-5", obj(`[]`),
			`anthropic: request: response format schema: at the root: the schema is not a JSON object`},
		{"map", "claude-sonnet-4-5", obj(`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`),
			`anthropic: request: response format schema: at /properties/m: an open object (no properties, additionalProperties not false, as a map gives) is not taken: give the object properties, or use a final-answer tool`},
		{"open object", "claude-sonnet-4-5", obj(`{"type":"object"}`),
			`anthropic: request: response format schema: at the root: an open object (no properties, additionalProperties not false) is not taken: give the object properties, or use a final-answer tool`},
		{"recursive", "claude-sonnet-4-5", obj(`{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"],"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["kids"]}}}`),
			`anthropic: request: response format schema: at /$defs/node/properties/kids/items/$ref: a recursive schema (a $ref back into itself) is not taken`},
		{"recursive to root", "claude-sonnet-4-5", obj(`{"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]}`),
			`anthropic: request: response format schema: at /properties/next/$ref: a recursive schema (a $ref back into itself) is not taken`},
		{"external ref", "claude-sonnet-4-5", obj(`{"type":"object","properties":{"a":{"$ref":"https://example.invalid/s.json"}}}`),
			`anthropic: request: response format schema: at /properties/a/$ref: the reference "https://example.invalid/s.json" is not local to the schema`},
		{"dangling ref", "claude-sonnet-4-5", obj(`{"type":"object","properties":{"a":{"$ref":"#/$defs/none"}}}`),
			`anthropic: request: response format schema: at /properties/a/$ref: the reference "#/$defs/none" points at nothing`},
		{"enum of objects", "claude-sonnet-4-5", obj(`{"type":"object","properties":{"a":{"enum":[{"x":1}]}}}`),
			`anthropic: request: response format schema: at /properties/a/enum: an enum of objects or arrays is not taken`},
		{"tuple", "claude-sonnet-4-5", obj(`{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}}}`),
			`anthropic: request: response format schema: at /properties/a/items: tuple items (a list of schemas) are not taken`},
		{"bad property", "claude-sonnet-4-5", obj(`{"type":"object","properties":{"a":3}}`),
			`anthropic: request: response format schema: at /properties/a: a schema must be an object or a boolean`},
		{"too many optional", "claude-sonnet-4-5", obj(`{"type":"object","properties":{` + props(25) + `}}`),
			`anthropic: request: response format schema: at the root: 25 optional properties; structured outputs take at most 24 (make some required)`},
		{"too many unions", "claude-sonnet-4-5", obj(`{"type":"object","properties":{` + unions(17) + `},"required":[` + names(17) + `]}`),
			`anthropic: request: response format schema: at the root: 17 union types (anyOf, type lists); structured outputs take at most 16`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			p := f.provider(t, WithModel(c.model))
			_, _, err := collect(p, &provider.Request{Turns: []ledger.Turn{userTurn("x")}, ResponseFormat: c.format})
			var re *RequestError
			if !errors.As(err, &re) || err.Error() != c.want {
				t.Fatalf("err = %v\nwant %s", err, c.want)
			}
			if len(f.raw) != 0 {
				t.Fatal("a refused request was sent")
			}
			if cerr := p.CheckResponseFormat(*c.format); cerr == nil || cerr.Error() != c.want {
				t.Fatalf("CheckResponseFormat = %v", cerr)
			}
		})
	}
}

func props(n int) string {
	var b []string
	for i := range n {
		b = append(b, `"p`+string(rune('a'+i))+`":{"type":"string"}`)
	}
	return strings.Join(b, ",")
}

func unions(n int) string {
	var b []string
	for i := range n {
		b = append(b, `"p`+string(rune('a'+i))+`":{"type":["string","null"]}`)
	}
	return strings.Join(b, ",")
}

func names(n int) string {
	var b []string
	for i := range n {
		b = append(b, `"p`+string(rune('a'+i))+`"`)
	}
	return strings.Join(b, ",")
}

// A local reference goes alone, as the API takes it; what it points at is
// rewritten like any schema.
func TestOutputSchemaReference(t *testing.T) {
	got, err := outputSchema(json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/x","description":"dropped"}},"required":["a"],"$defs":{"x":{"type":"object","properties":{"b":{"type":"string","maxLength":3}},"required":["b"],"additionalProperties":true}},"$id":"s"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"$defs":{"x":{"type":"object","properties":{"b":{"type":"string","description":"(maxLength: 3)"}},"required":["b"],"additionalProperties":false}},"additionalProperties":false,"properties":{"a":{"$ref":"#/$defs/x"}},"required":["a"],"type":"object"}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("schema =\n%s\nwant\n%s", b, want)
	}
}

// Whatever schema it is given, outputSchema refuses it with a
// *SchemaError or gives one that encodes as a JSON object.
func FuzzOutputSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","minLength":1}},"required":["a"]}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"object","properties":{"b":{"$ref":"#/$defs/x"}}}}}`,
		`{"anyOf":[{"type":"object","properties":{}},{"type":"null"}],"oneOf":[]}`,
		`{"type":["object","null"],"properties":{"a":true}}`,
		`{"$ref":"#/properties/a/~1b"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := outputSchema(json.RawMessage(s), "d")
		if err != nil {
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("error %T: %v", err, err)
			}
			return
		}
		b, err := json.Marshal(out)
		if err != nil || len(b) == 0 || b[0] != '{' || !json.Valid(b) {
			t.Fatalf("schema %q became %s (%v)", s, b, err)
		}
	})
}
