package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
)

type addIn struct {
	A     float64 `json:"a" jsonschema:"description=first addend"`
	B     float64 `json:"b"`
	Round bool    `json:"round,omitempty"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

func typedAdd(_ context.Context, in addIn) (addOut, error) {
	return addOut{Sum: in.A + in.B}, nil
}

func TestSchemaForReflectsStruct(t *testing.T) {
	raw, err := tool.SchemaFor[addIn]()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Type       string                    `json:"type"`
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
		Additional *bool                     `json:"additionalProperties"`
		Schema     string                    `json:"$schema"`
		ID         string                    `json:"$id"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || len(s.Properties) != 3 || strings.Join(s.Required, ",") != "a,b" {
		t.Fatalf("schema %s", raw)
	}
	if s.Additional == nil || *s.Additional {
		t.Fatalf("schema is open to unknown properties: %s", raw)
	}
	if s.Properties["a"]["description"] != "first addend" {
		t.Fatalf("description lost: %s", raw)
	}
	if s.Schema != "" || s.ID != "" {
		t.Fatalf("schema carries $schema/$id noise: %s", raw)
	}
	if err := tool.ValidateSchema(raw); err != nil {
		t.Fatal(err)
	}
	if _, err := tool.SchemaFor[int](); err == nil {
		t.Fatal("SchemaFor[int] succeeded")
	}
	empty, err := tool.SchemaFor[struct{}]()
	if err != nil || tool.ValidateSchema(empty) != nil {
		t.Fatalf("empty struct schema %s: %v", empty, err)
	}
}

func TestRegisterFuncValidatesBeforeRunning(t *testing.T) {
	reg := tool.NewRegistry()
	ran := 0
	err := tool.RegisterFunc(reg, "add", "Add two numbers", func(ctx context.Context, in addIn) (addOut, error) {
		ran++
		return typedAdd(ctx, in)
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := reg.Lookup("add")
	v, err := b.Call(context.Background(), tool.NoSandbox(), `{"a":2,"b":3}`)
	if err != nil || v != (addOut{Sum: 5}) {
		t.Fatalf("call = %#v, %v", v, err)
	}
	for _, bad := range []string{`{"a":2}`, `{"a":"2","b":3}`, `{"a":2,"b":3,"c":4}`, `[1]`, `nope`} {
		_, err := b.Call(context.Background(), tool.NoSandbox(), bad)
		var ae *tool.ArgumentsError
		if !errors.As(err, &ae) {
			t.Errorf("args %s: err = %v, want ArgumentsError", bad, err)
		}
	}
	if ran != 1 {
		t.Fatalf("function ran %d times; invalid arguments must not reach it", ran)
	}
}

func TestNewFuncThroughPlainRegister(t *testing.T) {
	tl, fn, err := tool.NewFunc("add", "Add", typedAdd, tool.WithHints(tool.Hints{ReadOnly: true}))
	if err != nil {
		t.Fatal(err)
	}
	if !tl.Hints.ReadOnly {
		t.Fatal("hints lost")
	}
	v, err := fn(context.Background(), tool.NoSandbox(), map[string]any{"a": 1.5, "b": 1.0})
	if err != nil || v != (addOut{Sum: 2.5}) {
		t.Fatalf("fn = %#v, %v", v, err)
	}
	if _, _, err := tool.NewFunc[addIn, addOut]("add", "Add", nil); err == nil {
		t.Fatal("nil function accepted")
	}
	if _, _, err := tool.NewFunc("bad name", "x", typedAdd); err != nil {
		t.Fatalf("NewFunc checks names only at registration, got %v", err)
	}
	if err := tool.RegisterFunc(tool.NewRegistry(), "bad name", "x", typedAdd); err == nil {
		t.Fatal("bad name registered")
	}
}

func TestValidateSchema(t *testing.T) {
	cases := map[string]bool{
		``:                  true,
		`{"type":"object"}`: true,
		`{"type":"object","properties":{"type":{"type":"string"}}}`:                     true,
		`{"type":"object","properties":{"k":{"type":"string","default":{"type":"x"}}}}`: true,
		`{"type":"object","properties":{"k":{"type":["string","null"]}}}`:               true,
		`{"type":"object","properties":{"k":{"type":["string","bogus"]}}}`:              false,
		`{"type":"object","properties":{"k":{"items":{"type":"bogus"}}}}`:               false,
		`{"type":"object","properties":{"k":{"anyOf":[{"type":7}]}}}`:                   false,
		`{"type":"string"}`: false,
		`not json`:          false,
		`{"type":"object","$ref":"https://example.invalid/remote.json"}`: false,
	}
	for in, ok := range cases {
		err := tool.ValidateSchema(json.RawMessage(in))
		if (err == nil) != ok {
			t.Errorf("ValidateSchema(%s) = %v, want ok=%v", in, err, ok)
		}
	}
}

type treeNode struct {
	Name string     `json:"name"`
	Kids []treeNode `json:"kids,omitempty"`
}

type forestIn struct {
	Trees []*treeNode `json:"trees"`
}

func countNodes(ns []treeNode) int {
	n := len(ns)
	for _, c := range ns {
		n += countNodes(c.Kids)
	}
	return n
}

// A type that contains itself cannot be inlined; its schema refers to
// itself, and arguments are still checked to any depth.
func TestRecursiveArgumentTypes(t *testing.T) {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "tree", "Count nodes", func(_ context.Context, in treeNode) (int, error) {
		return 1 + countNodes(in.Kids), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := tool.RegisterFunc(reg, "forest", "Count trees", func(_ context.Context, in forestIn) (int, error) {
		return len(in.Trees), nil
	}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tool, args string
		want       any
		err        string
	}{
		{"tree", `{"name":"a","kids":[{"name":"b","kids":[{"name":"c"}]}]}`, 3, ""},
		{"tree", `{"name":"a","kids":[{"name":"b","kids":[{"nom":"c"}]}]}`, nil, `validating /$defs/treeNode: unexpected additional properties ["nom"]`},
		{"forest", `{"trees":[{"name":"a"},{"name":"b","kids":[{"name":"c"}]}]}`, 2, ""},
		{"forest", `{"trees":[{"name":"a","kids":[{"name":1}]}]}`, nil, `has type "integer", want "string"`},
	}
	for _, c := range cases {
		b, _ := reg.Lookup(c.tool)
		v, err := b.Call(context.Background(), tool.NoSandbox(), c.args)
		if c.err == "" {
			if err != nil || v != c.want {
				t.Errorf("%s(%s) = %v, %v; want %v", c.tool, c.args, v, err, c.want)
			}
			continue
		}
		if !errors.As(err, new(*tool.ArgumentsError)) || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s(%s) = %v; want an *ArgumentsError containing %q", c.tool, c.args, err, c.err)
		}
	}
	for name, want := range map[string]string{
		"tree":   `{"$defs":{"treeNode":`,
		"forest": `{"$defs":{"treeNode":`,
	} {
		b, _ := reg.Lookup(name)
		sch := string(b.Tool.Schema)
		if !strings.HasPrefix(sch, want) || !strings.Contains(sch, `"type":"object"`) || strings.Contains(sch, "forestIn") {
			t.Errorf("schema of %s: %s", name, sch)
		}
	}
	// A type that does not contain itself stays inlined.
	raw, _ := tool.SchemaFor[addIn]()
	if strings.Contains(string(raw), "$ref") || strings.Contains(string(raw), "$defs") {
		t.Errorf("schema of a plain type uses references: %s", raw)
	}
}
