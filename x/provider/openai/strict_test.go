package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestCheckStrict(t *testing.T) {
	obj := func(props, required string) string {
		return `{"type":"object","properties":{` + props + `},"required":[` + required + `],"additionalProperties":false}`
	}
	deep := `{"type":"string"}`
	for range 10 {
		deep = obj(`"a":`+deep, `"a"`)
	}
	cases := []struct {
		name   string
		schema string
		want   string // "" qualifies
	}{
		{"flat object", obj(`"a":{"type":"string"},"b":{"type":"integer"}`, `"a","b"`), ""},
		{"no properties", `{"type":"object","properties":{},"additionalProperties":false}`, ""},
		{"no properties member", `{"type":"object","additionalProperties":false}`, ""},
		{"nullable through a type list", obj(`"a":{"type":["string","null"]}`, `"a"`), ""},
		{"nested objects and arrays", obj(`"a":{"type":"array","items":`+obj(`"b":{"type":"boolean"}`, `"b"`)+`,"minItems":1}`, `"a"`), ""},
		{"anyOf, enum, const, format, pattern, numbers", obj(
			`"a":{"anyOf":[{"type":"string","format":"date-time"},{"type":"null"}]},"b":{"type":"string","enum":["x","y"]},`+
				`"c":{"const":"k"},"d":{"type":"string","pattern":"^[a-z]+$"},"e":{"type":"number","minimum":0,"exclusiveMaximum":1,"multipleOf":0.5}`,
			`"a","b","c","d","e"`), ""},
		{"local refs and $defs", `{"type":"object","properties":{"n":{"$ref":"#/$defs/node"}},"required":["n"],"additionalProperties":false,` +
			`"$defs":{"node":` + obj(`"v":{"type":"string","description":"value","title":"V"}`, `"v"`) + `}}`, ""},
		{"ten levels deep", deep, ""},

		{"empty", ``, "schema is empty"},
		{"not JSON", `{`, "schema is not valid JSON: unexpected end of JSON input"},
		{"not an object", `true`, "schema is not a JSON object"},
		{"root not an object type", `{"type":"string"}`, `root schema must have "type": "object"`},
		{"root anyOf", `{"type":"object","anyOf":[],"additionalProperties":false}`, "root schema must not be anyOf"},
		{"additionalProperties missing", `{"type":"object","properties":{}}`, "#: object must set additionalProperties to false"},
		{"additionalProperties true", `{"type":"object","properties":{},"additionalProperties":true}`, "#: object must set additionalProperties to false"},
		{"additionalProperties a schema", `{"type":"object","properties":{},"additionalProperties":{"type":"string"}}`, "#: object must set additionalProperties to false"},
		{"an optional property", obj(`"a":{"type":"string"},"b":{"type":"string"}`, `"a"`), `#: property "b" is not required`},
		{"required names a stranger", obj(`"a":{"type":"string"}`, `"a","z"`), `#: required names "z", which is not a property`},
		{"required is not a list", `{"type":"object","properties":{},"required":"a","additionalProperties":false}`, "#: required is not an array"},
		{"nested object not closed", obj(`"a":{"type":"object","properties":{}}`, `"a"`), "#/properties/a: object must set additionalProperties to false"},
		{"unsupported keyword", obj(`"a":{"type":"string","minLength":1}`, `"a"`), `#/properties/a: keyword "minLength" is not supported`},
		{"allOf", obj(`"a":{"allOf":[{"type":"string"}]}`, `"a"`), `#/properties/a: keyword "allOf" is not supported`},
		{"default", obj(`"a":{"type":"string","default":"x"}`, `"a"`), `#/properties/a: keyword "default" is not supported`},
		{"$schema", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{},"additionalProperties":false}`, `#: keyword "$schema" is not supported`},
		{"no type", obj(`"a":{"description":"anything"}`, `"a"`), "#/properties/a: schema has no type"},
		{"unknown type", obj(`"a":{"type":"date"}`, `"a"`), "#/properties/a: type date is not supported"},
		{"empty type list", obj(`"a":{"type":[]}`, `"a"`), "#/properties/a: type is an empty array"},
		{"type not a string", obj(`"a":{"type":1}`, `"a"`), "#/properties/a: type is neither a string nor an array"},
		{"unsupported format", obj(`"a":{"type":"string","format":"uri"}`, `"a"`), "#/properties/a: format uri is not supported"},
		{"array without items", obj(`"a":{"type":"array"}`, `"a"`), "#/properties/a: array has no items schema"},
		{"boolean schema", obj(`"a":true`, `"a"`), "#/properties/a: a schema must be an object"},
		{"remote ref", obj(`"a":{"$ref":"https://example.invalid/s.json"}`, `"a"`), "#/properties/a: $ref https://example.invalid/s.json is not local to the schema"},
		{"anyOf not a list", obj(`"a":{"anyOf":{}}`, `"a"`), "#/properties/a: anyOf is not a non-empty array"},
		{"bad anyOf branch", obj(`"a":{"anyOf":[{"type":"string"},{"type":"string","maxLength":3}]}`, `"a"`), `#/properties/a/anyOf/1: keyword "maxLength" is not supported`},
		{"bad definition", `{"type":"object","properties":{},"additionalProperties":false,"$defs":{"x":{"type":"object"}}}`, "#/$defs/x: object must set additionalProperties to false"},
		{"properties on a string", obj(`"a":{"type":"string","properties":{}}`, `"a"`), "#/properties/a: properties on a schema that is not an object"},
		{"enum not a list", obj(`"a":{"type":"string","enum":"x"}`, `"a"`), "#/properties/a: enum is not an array"},
		{"eleven levels deep", obj(`"z":`+deep, `"z"`), "#/properties/z/properties/a/properties/a/properties/a/properties/a/properties/a/properties/a/properties/a/properties/a/properties/a: objects nested deeper than 10 levels"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckStrict(json.RawMessage(tc.schema))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckStrict =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestCheckStrictLimits(t *testing.T) {
	props := func(n int) string {
		var p, r []string
		for i := range n {
			p = append(p, fmt.Sprintf(`"p%d":{"type":"string"}`, i))
			r = append(r, fmt.Sprintf(`"p%d"`, i))
		}
		return `{"type":"object","properties":{` + strings.Join(p, ",") + `},"required":[` + strings.Join(r, ",") + `],"additionalProperties":false}`
	}
	enum := func(n int) string {
		var v []string
		for i := range n {
			v = append(v, fmt.Sprintf(`"v%d"`, i))
		}
		return `{"type":"object","properties":{"e":{"type":"string","enum":[` + strings.Join(v, ",") + `]}},"required":["e"],"additionalProperties":false}`
	}
	cases := []struct {
		name, schema, want string
	}{
		{"5000 properties", props(5000), ""},
		{"5001 properties", props(5001), "#: more than 5000 properties in all"},
		{"1000 enum values", enum(1000), ""},
		{"1001 enum values", enum(1001), "#/properties/e: more than 1000 enum values in all"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := CheckStrict(json.RawMessage(tc.schema)); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("CheckStrict = %q, want %q", got, tc.want)
			}
		})
	}
}
