package tool

import (
	"encoding/json"
	"fmt"
	"testing"
)

// quickSchemas are the schemas the differential fuzz test starts from: the
// shapes typed tools reflect, and keywords the quick check does not know.
var quickSchemas = []string{
	`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"label":{"type":"string"}},"additionalProperties":false,"required":["a","b","label"]}`,
	`{"type":"object","properties":{"s":{"type":"string","maxLength":8,"minLength":1},"n":{"type":"number","minimum":-1.5,"exclusiveMaximum":10},"list":{"type":"array","items":{"type":"number"},"minItems":1,"maxItems":3}},"required":["s"]}`,
	`{"type":"object","properties":{"mode":{"type":"string","enum":["fast","slow","é"]},"opt":{"type":["string","null"]},"deep":{"type":"object","properties":{"x":{"type":"boolean"}},"additionalProperties":{"type":"integer","maximum":5,"exclusiveMinimum":0}}}}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"q":{"type":"string","description":"query","format":"uri","default":"x"}},"additionalProperties":true}`,
	`{"type":"object","properties":{"p":{"type":"string","pattern":"^a+$"},"c":{"const":3},"e":{"enum":[1,"1",null]}},"patternProperties":{"^x":{"type":"integer"}}}`,
	`{"type":"object","properties":{"t":{"$ref":"#/$defs/t"}},"$defs":{"t":{"type":"object","properties":{"t":{"$ref":"#/$defs/t"}}}}}`,
	`{"type":"object","properties":{"any":true,"none":false,"tuple":{"items":[{"type":"string"}]}},"minProperties":1}`,
	`{"type":"object"}`,
}

var quickArgs = []string{
	`{"a":40,"b":2,"label":"answer"}`,
	`{"a":40.0,"b":2e1,"label":""}`,
	`{"a":1.5,"b":2,"label":"x"}`,
	`{"a":1,"b":2,"label":"x","c":3}`,
	`{"a":1,"b":2}`,
	` {"s":"abcdefgh","n":9.99,"list":[1,2.5,-0]} `,
	`{"s":"abcdéfghi"}`,
	`{"s":"","n":10}`,
	`{"s":"a\u00e9","list":[]}`,
	`{"mode":"é","opt":null,"deep":{"x":true,"y":5}}`,
	`{"mode":"fast","deep":{"y":0}}`,
	`{"q":"http://x","more":[{"a":null},[true,false]],"n":-0.5e-3}`,
	`{"e":1.0,"c":3,"x1":2}`,
	`{"t":{"t":{}}}`,
	`{"any":[1,{}],"tuple":["a"]}`,
	`{"a":1e400,"b":1,"label":"x"}`,
	`{"a":01,"b":1,"label":"x"}`,
	`{"a":1,"a":"x","b":1,"label":"x"}`,
	`{"label":"\x00","a":1,"b":1}`,
	"{\"label\":\"\xff\",\"a\":1,\"b\":1}",
	`{"a":1,"b":2,"label":"x"}x`,
	`{}`, ``, `null`, `[]`, `{"a":}`, `{"a":1,}`, `{"\u0061":1,"b":2,"label":"x"}`,
}

// FuzzValidateQuick holds the quick check to the full validator: whatever
// the quick check proves valid, the full path (encoding/json, then
// jsonschema-go) must accept. What it does not prove goes to the full
// validator anyway, so the two together accept exactly what the full
// validator accepts, with its messages.
func FuzzValidateQuick(f *testing.F) {
	for _, s := range quickSchemas {
		for _, a := range quickArgs {
			f.Add(s, a)
		}
	}
	f.Fuzz(func(t *testing.T, schema, args string) {
		cs, err := compileSchema(json.RawMessage(schema))
		if err != nil {
			return
		}
		if !cs.quick.proves(args) {
			return
		}
		m, err := parseArgs(args)
		if err != nil {
			t.Fatalf("quick check proved %q, which encoding/json refuses: %v", args, err)
		}
		if err := cs.validate(m); err != nil {
			t.Fatalf("quick check proved %q against %s, which the validator refuses: %v", args, schema, err)
		}
	})
}

// TestQuickCheckProves pins what the quick check proves, so that a change
// that makes it prove nothing (and every call slow) fails here.
func TestQuickCheckProves(t *testing.T) {
	cases := []struct {
		schema int
		args   string
		want   bool
	}{
		{0, `{"a":40,"b":2,"label":"answer"}`, true},
		{0, ` {"label":"ünïcode","b":-2,"a":4e1} `, true},
		{0, `{"a":40,"b":2}`, false},                   // missing label
		{0, `{"a":40,"b":2,"label":"x","c":1}`, false}, // closed
		{0, `{"a":1.5,"b":2,"label":"x"}`, false},      // not an integer
		{0, `{"a":1e400,"b":2,"label":"x"}`, false},    // out of range
		{0, `{"a":1,"b":2,"label":"x"} x`, false},      // trailing text
		{0, `{"\u0061":1,"b":2,"label":"x"}`, false},   // escaped key: full validator decides
		{1, `{"s":"abcdefgh","n":9.99,"list":[1,2.5]}`, true},
		{1, `{"s":"abcdefghi"}`, false},      // maxLength
		{1, `{"s":"a","n":10}`, false},       // exclusiveMaximum
		{1, `{"s":"a","list":[]}`, false},    // minItems
		{1, `{"s":"a\n","list":[1]}`, false}, // escapes and a length bound
		{2, `{"mode":"é","opt":null,"deep":{"x":true,"y":5}}`, true},
		{2, `{"mode":"medium"}`, false},
		{2, `{"deep":{"y":0}}`, false}, // exclusiveMinimum of extras
		{3, `{"q":"a\"b","other":{"x":[null,true,false,-0.5e-3]}}`, true},
		{4, `{}`, false}, // opaque keywords
		{7, `{}`, true},
		{7, ``, false}, // blank: the full path says it means {}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d/%s", c.schema, c.args), func(t *testing.T) {
			cs, err := compileSchema(json.RawMessage(quickSchemas[c.schema]))
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.quick.proves(c.args); got != c.want {
				t.Fatalf("proves(%s) = %v, want %v", c.args, got, c.want)
			}
		})
	}
}
