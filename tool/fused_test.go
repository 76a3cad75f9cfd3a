package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/internal/structjson"
)

// The argument types the fused-path tests decode into: the shapes typed
// tools take, each with the schema reflected from it among the seeds.
type (
	fuseAdd struct {
		A     int    `json:"a"`
		B     int    `json:"b"`
		Label string `json:"label"`
	}
	fuseMixed struct {
		F    float64  `json:"f"`
		G    float32  `json:"g,omitempty"`
		U    uint8    `json:"u"`
		N    int8     `json:"n,omitempty"`
		Ok   bool     `json:"ok"`
		S    string   `json:"s,omitempty"`
		P    *int     `json:"p,omitempty"`
		List []string `json:"list,omitempty"`
	}
	fuseLoose struct {
		Mode  string `json:"mode,omitempty"`
		Count int    `json:"count,omitempty"`
	}
)

var fuseTypes = []reflect.Type{reflect.TypeFor[fuseAdd](), reflect.TypeFor[fuseMixed](), reflect.TypeFor[fuseLoose]()}

// fuseSchemas are the seeds of FuzzFusedPath: each type's reflected schema,
// and schemas that agree with a type in all but one respect.
func fuseSchemas(tb testing.TB) []string {
	out := []string{
		`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"integer"},"label":{"type":"string"}},"required":["a","label"]}`,
		`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer","minimum":0},"label":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer"}}`,
		`{"type":"object","properties":{"f":{"type":"integer"},"mode":{"enum":["x"]}}}`,
		`{"type":"object","properties":{"mode":{"type":"string","maxLength":3}},"required":["mode","other"]}`,
		`{"type":"object","properties":{"mode":{"type":["string","null"]},"count":{}},"additionalProperties":false}`,
		`{"type":"object","additionalProperties":false}`,
		`{"type":"object"}`,
		`{"type":["object","null"],"properties":{"count":true}}`,
		`{"type":"object","properties":{"count":{"type":"integer","description":"how many","format":"int64"}},"minProperties":1}`,
	}
	for _, typ := range fuseTypes {
		s, err := reflectSchema(typ)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, string(s))
	}
	return out
}

// reflectSchema is SchemaFor for a type known at run time.
func reflectSchema(t reflect.Type) (json.RawMessage, error) {
	switch t {
	case reflect.TypeFor[fuseAdd]():
		return SchemaFor[fuseAdd]()
	case reflect.TypeFor[fuseMixed]():
		return SchemaFor[fuseMixed]()
	case reflect.TypeFor[fuseLoose]():
		return SchemaFor[fuseLoose]()
	}
	return nil, fmt.Errorf("no schema for %s", t)
}

var fuseArgs = []string{
	`{"a":40,"b":2,"label":"answer"}`,
	`{"a":40,"b":2}`,
	`{"a":1.5,"b":2,"label":"x"}`,
	`{"a":-0,"b":9223372036854775807,"label":"tab\tand \u00e9"}`,
	`{"a":1,"a":2,"b":3,"label":"dup"}`,
	`{"f":1.5,"g":2,"u":255,"n":-128,"ok":true,"s":"x","p":null,"list":["a"]}`,
	`{"f":1e3,"u":0,"ok":false}`,
	`{"f":1,"u":256,"ok":true}`,
	`{"f":1,"u":1,"ok":true,"p":3,"list":null}`,
	`{"mode":"fast","count":3}`,
	`{"mode":"fastest"}`,
	`{}`,
	` { "count" : 0 } `,
	`{"count":1.0}`,
}

// FuzzFusedPath holds the fused path (decoding is validating, for a schema
// the decoder's own checks imply) against the full validator: whatever
// impliedBy lets through must be accepted by the validator, and decoded as
// encoding/json decodes it.
func FuzzFusedPath(f *testing.F) {
	for _, s := range fuseSchemas(f) {
		for _, a := range fuseArgs {
			f.Add(s, a)
		}
	}
	f.Fuzz(func(t *testing.T, schema, args string) {
		cs, err := compileSchema(json.RawMessage(schema))
		if err != nil {
			return
		}
		for _, typ := range fuseTypes {
			dec := structjson.NewDecoder(typ)
			required, ok := cs.quick.impliedBy(dec.Fields())
			if !ok {
				continue
			}
			v := reflect.New(typ)
			seen, ok := dec.DecodeSeen(args, v.UnsafePointer())
			if !ok || seen&required != required {
				continue
			}
			m, err := parseArgs(args)
			if err != nil {
				t.Fatalf("%s: fused path took %q, which encoding/json refuses: %v", typ, args, err)
			}
			if err := cs.validate(m); err != nil {
				t.Fatalf("%s: fused path took %q against %s, which the validator refuses: %v", typ, args, schema, err)
			}
			want := reflect.New(typ)
			if err := json.Unmarshal([]byte(args), want.Interface()); err != nil {
				t.Fatalf("%s: fused path took %q, which json.Unmarshal refuses: %v", typ, args, err)
			}
			if !reflect.DeepEqual(v.Elem().Interface(), want.Elem().Interface()) {
				t.Fatalf("%s: %q decoded as %+v, json.Unmarshal gives %+v", typ, args, v.Elem(), want.Elem())
			}
		}
	})
}

// TestFusedPath pins which tools decode without the quick check, so that
// a change that turns the fused path off (and every call slower) fails
// here, and that what it declines still gets the validator's own words.
func TestFusedPath(t *testing.T) {
	reg := NewRegistry()
	add := func(_ context.Context, in fuseAdd) (int, error) { return in.A + in.B, nil }
	if err := RegisterFunc(reg, "add", "", add); err != nil {
		t.Fatal(err)
	}
	bounded := func(_ context.Context, in struct {
		N int `json:"n" jsonschema:"minimum=1"`
	}) (int, error) {
		return in.N, nil
	}
	if err := RegisterFunc(reg, "bounded", "", bounded); err != nil {
		t.Fatal(err)
	}
	mixed := func(_ context.Context, in fuseMixed) (float64, error) { return in.F, nil }
	if err := RegisterFunc(reg, "mixed", "", mixed); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool     string
		fused    bool
		required uint64
	}{
		{"add", true, 0b111},
		{"bounded", false, 0}, // a bound the decoder does not check
		{"mixed", false, 0},   // a pointer and a slice, which also take null
	} {
		b, _ := reg.Lookup(c.tool)
		if b.fused != c.fused || b.required != c.required {
			t.Errorf("%s: fused %v, required %b; want %v, %b", c.tool, b.fused, b.required, c.fused, c.required)
		}
	}

	b, _ := reg.Lookup("add")
	for _, c := range []struct{ args, err string }{
		{`{"a":40,"b":2,"label":"x"}`, ""},
		{`{"a":40,"b":2}`, `missing properties: ["label"]`},
		{`{"a":40,"b":"2","label":"x"}`, `has type "string", want "integer"`},
		{`{"a":40,"b":2,"label":"x","c":1}`, `unexpected additional properties ["c"]`},
		// Declined by the decoder, proved by the quick check: encoding/json
		// decodes, in its own words.
		{`{"a":4e1,"b":2,"label":"x"}`, `cannot unmarshal number 4e1`},
		// Declined by both, accepted by the validator: encoding/json decodes.
		{`{"\u0061":40,"b":2,"label":"x"}`, ""},
	} {
		run, err := b.Prepare(NoSandbox(), c.args)
		if c.err == "" {
			if err != nil {
				t.Fatalf("%s: %v", c.args, err)
			}
			if v, err := run(context.Background()); err != nil || v != 42 {
				t.Fatalf("%s: ran to %v, %v; want 42", c.args, v, err)
			}
			continue
		}
		var ae *ArgumentsError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), c.err) {
			t.Fatalf("%s: error %v, want an ArgumentsError saying %q", c.args, err, c.err)
		}
	}
}
