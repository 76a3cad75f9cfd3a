package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unsafe"

	"github.com/invopop/jsonschema"

	"github.com/lodeworks/lode/internal/structjson"
)

// FuncOption adjusts a typed tool.
type FuncOption func(*Tool)

// WithHints sets a typed tool's hints.
func WithHints(h Hints) FuncOption { return func(t *Tool) { t.Hints = h } }

// WithTimeout sets a typed tool's per-call timeout.
func WithTimeout(d time.Duration) FuncOption { return func(t *Tool) { t.Timeout = d } }

// WithBudget sets a typed tool's result budget.
func WithBudget(b Budget) FuncOption { return func(t *Tool) { t.Budget = b } }

// WithInline promises that a typed tool returns promptly or as soon as its
// context ends (see Tool.Inline), so that it may run on the caller's
// goroutine: a pure computation, a lookup in memory, a call that passes
// its context to everything it waits on.
func WithInline() FuncOption { return func(t *Tool) { t.Inline = true } }

// WithSchema replaces the reflected schema.
func WithSchema(s json.RawMessage) FuncOption { return func(t *Tool) { t.Schema = s } }

// SchemaFor reflects the JSON Schema of the arguments type In: an object
// whose properties are In's exported fields, named by their json tags,
// required unless tagged omitempty, and closed to other properties. The
// jsonschema struct tag of invopop/jsonschema adds descriptions, enums and
// bounds. Every type is inlined, except in a type that contains itself (a
// tree), which is described with "$defs" and "$ref".
func SchemaFor[In any]() (json.RawMessage, error) {
	typ := reflect.TypeFor[In]()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("tool: arguments type %s is not a struct", typ)
	}
	// Inline every type, which every model API reads, unless a type contains
	// itself: that can only be written with references, and inlining it
	// would recurse without end.
	rec := recursive(typ, nil)
	r := &jsonschema.Reflector{ExpandedStruct: !rec, DoNotReference: !rec, Anonymous: true}
	s := r.ReflectFromType(typ)
	if rec {
		s = rootFromDefs(s)
	}
	s.Version = ""
	if s.Properties == nil || s.Properties.Len() == 0 {
		// An empty struct still takes an object, and says so to the model.
		return json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`), nil
	}
	return json.Marshal(s)
}

// NewFunc builds a tool from a typed function. The schema is reflected from
// In (see SchemaFor); the returned ToolFunc decodes validated arguments into
// In. Prefer RegisterFunc, which skips the map and decodes the model's JSON
// straight into In.
func NewFunc[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...FuncOption) (Tool, ToolFunc, error) {
	t, tf, _, err := typedTool(name, description, fn, opts)
	return t, tf, err
}

// RegisterFunc builds a typed tool (see NewFunc) and registers it in reg.
func RegisterFunc[In, Out any](reg Registry, name, description string, fn func(context.Context, In) (Out, error), opts ...FuncOption) error {
	t, tf, typed, err := typedTool(name, description, fn, opts)
	if err != nil {
		return err
	}
	if r, ok := reg.(*registry); ok {
		return r.registerTyped(t, tf, typed)
	}
	return reg.Register(t, tf)
}

func typedTool[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts []FuncOption) (Tool, ToolFunc, *typedArgs, error) {
	if fn == nil {
		return Tool{}, nil, nil, fmt.Errorf("tool: %q: nil function", name)
	}
	t := Tool{Name: name, Description: description}
	for _, o := range opts {
		o(&t)
	}
	if t.Schema == nil {
		s, err := SchemaFor[In]()
		if err != nil {
			return Tool{}, nil, nil, fmt.Errorf("registering %q: %w", name, err)
		}
		t.Schema = s
	}
	// A plain struct decodes without encoding/json; whatever the compiled
	// decoder declines, encoding/json decodes, with its own errors.
	dec := structjson.NewDecoder(reflect.TypeFor[In]())
	// The prepared call refers to the decoded arguments where they were
	// decoded, rather than copying them into a closure of its own: that
	// saves a copy of In per call, the largest of a call's allocations.
	typed := &typedArgs{slow: func(raw string) (Prepared, error) {
		var in In
		if err := json.Unmarshal([]byte(raw), &in); err != nil {
			return nil, &ArgumentsError{Tool: name, Err: err}
		}
		return func(ctx context.Context) (any, error) { return fn(ctx, in) }, nil
	}}
	if dec != nil {
		typed.fields = dec.Fields()
		typed.fast = func(raw string) (Prepared, uint64, bool) {
			var in In
			seen, ok := dec.DecodeSeen(raw, unsafe.Pointer(&in))
			if !ok {
				return nil, 0, false
			}
			return func(ctx context.Context) (any, error) { return fn(ctx, in) }, seen, true
		}
	}
	tf := func(ctx context.Context, _ Sandbox, args map[string]any) (any, error) {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		run, err := typed.decode(string(raw), false)
		if err != nil {
			return nil, err
		}
		return run(ctx)
	}
	return t, tf, typed, nil
}

// recursive reports whether t contains itself, through fields, elements or
// pointers; path holds the struct types being walked.
func recursive(t reflect.Type, path map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	if path[t] {
		return true
	}
	if path == nil {
		path = make(map[reflect.Type]bool)
	}
	path[t] = true
	defer delete(path, t)
	for i := range t.NumField() {
		if f := t.Field(i); (f.IsExported() || f.Anonymous) && recursive(f.Type, path) {
			return true
		}
	}
	return false
}

// rootFromDefs turns a schema that only refers to its root's definition
// into that definition, an object, carrying the definitions along; the
// root's own definition stays only when something refers to it.
func rootFromDefs(s *jsonschema.Schema) *jsonschema.Schema {
	const prefix = "#/$defs/"
	name, ok := strings.CutPrefix(s.Ref, prefix)
	def, found := s.Definitions[name]
	if !ok || !found {
		return s
	}
	root := *def
	root.Definitions = s.Definitions
	others := make(jsonschema.Definitions, len(s.Definitions))
	for k, v := range s.Definitions {
		if k != name {
			others[k] = v
		}
	}
	raw, _ := json.Marshal(struct {
		Root *jsonschema.Schema
		Defs jsonschema.Definitions
	}{def, others})
	if !bytes.Contains(raw, []byte(`"`+prefix+name+`"`)) {
		root.Definitions = others
	}
	return &root
}
