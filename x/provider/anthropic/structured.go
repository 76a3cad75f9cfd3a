package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/lodeworks/lode/provider"
)

var _ provider.ResponseFormatSupporter = (*Provider)(nil)

// WithStructuredOutputs says whether the model takes structured outputs
// (output_config.format), overriding the family table of
// StructuredOutputs: true sends a response format to any model (one newer
// than this package, a gateway's alias), false never sends one, so that
// x/output's ModeAuto offers a final-answer tool instead.
func WithStructuredOutputs(on bool) Option { return func(s *settings) { s.structured = &on } }

// structuredFrom is the first version of each model family that takes
// structured outputs without a beta header; a family not listed takes
// them from generation 5 on.
var structuredFrom = []struct {
	family       string
	major, minor int
}{
	{"opus", 4, 5},
	{"sonnet", 4, 5},
	{"haiku", 4, 5},
}

// StructuredOutputs reports whether model is known to take structured
// outputs: Claude Opus, Sonnet and Haiku 4.5 and later (claude-opus-4-5,
// claude-sonnet-4-6, claude-haiku-4-5-20251001, ...), and every family
// from generation 5. Claude 3.x, Opus and Sonnet 4 and Opus 4.1 do not
// (Opus 4.1 had it only in a beta), nor does a name it cannot read. Vendor
// prefixes and suffixes of gateways and clouds ("anthropic/",
// "anthropic.", "@20250929", "-v1:0") are looked through.
func StructuredOutputs(model string) bool {
	family, major, minor, ok := parseModel(model)
	if !ok {
		return false
	}
	for _, f := range structuredFrom {
		if f.family == family {
			return major > f.major || (major == f.major && minor >= f.minor)
		}
	}
	return major >= 5
}

// parseModel reads a Claude model name: family ("opus", or "" for the
// Claude 3 names such as claude-3-5-sonnet) and version.
func parseModel(model string) (family string, major, minor int, ok bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(m, "claude-"); i > 0 && strings.ContainsAny(m[i-1:i], "/.:") {
		m = m[i:]
	}
	if i := strings.IndexByte(m, '@'); i >= 0 {
		m = m[:i]
	}
	rest, found := strings.CutPrefix(m, "claude-")
	if !found {
		return "", 0, 0, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) > 0 && !isSmallNumber(parts[0]) {
		family, parts = parts[0], parts[1:]
	}
	if len(parts) == 0 || !isSmallNumber(parts[0]) {
		return "", 0, 0, false
	}
	major, _ = strconv.Atoi(parts[0])
	if len(parts) > 1 && isSmallNumber(parts[1]) {
		minor, _ = strconv.Atoi(parts[1])
	}
	return family, major, minor, true
}

// isSmallNumber tells a version number from a date (20250929).
func isSmallNumber(s string) bool {
	if s == "" || len(s) > 2 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (p *Provider) structuredOutputs() bool {
	if p.structured != nil {
		return *p.structured
	}
	return StructuredOutputs(p.Model())
}

// SupportsResponseFormat reports whether a response format of type typ is
// sent: json_schema when the model takes structured outputs (see
// StructuredOutputs and WithStructuredOutputs); json_object never, as the
// Messages API has no mode for any JSON object.
func (p *Provider) SupportsResponseFormat(typ string) bool {
	return typ == provider.ResponseFormatJSONSchema && p.structuredOutputs()
}

// CheckResponseFormat reports, as the *RequestError Invoke would return,
// why f cannot be sent: the model takes no structured outputs, or the
// schema holds what Claude cannot enforce and this package cannot rewrite
// (see outputSchema). x/output's ModeAuto asks it before it chooses the
// response format over a final-answer tool.
func (p *Provider) CheckResponseFormat(f provider.ResponseFormat) error {
	_, err := p.outputFormat(&f)
	return err
}

// outputFormat maps a response format to output_config.format.
func (p *Provider) outputFormat(f *provider.ResponseFormat) (sdk.JSONOutputFormatParam, error) {
	var out sdk.JSONOutputFormatParam
	switch f.Type {
	case provider.ResponseFormatJSONSchema:
	case provider.ResponseFormatJSONObject:
		return out, reqErr("response format %q: the Messages API takes only a schema (%q)", f.Type, provider.ResponseFormatJSONSchema)
	default:
		return out, reqErr("unknown response format type %q; use %q", f.Type, provider.ResponseFormatJSONSchema)
	}
	if !p.structuredOutputs() {
		return out, reqErr("model %q is not known to take structured outputs (Claude 4.5 and later do): use WithStructuredOutputs(true) to send them anyway, or a final-answer tool (x/output's ModeTool)", p.Model())
	}
	schema, err := outputSchema(f.Schema, f.Description)
	if err != nil {
		return out, &RequestError{Turn: -1, Reason: "response format schema", Err: err}
	}
	out.Schema = schema
	return out, nil
}

// Limits of structured outputs, over all the schemas of a request.
const (
	maxOptionalProperties = 24
	maxUnionTypes         = 16
)

// formats are the string formats structured outputs enforce.
var formats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "uri": true, "ipv4": true, "ipv6": true, "uuid": true,
}

// kept are the keywords structured outputs take as they are; format and
// minItems are taken for some values. Any other keyword becomes a note in
// the description, so that the model still reads the constraint (x/output
// validates answers against the whole schema), except the ones dropped.
var kept = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true, "allOf": true, "oneOf": true,
	"$ref": true, "$defs": true, "definitions": true, "description": true, "title": true,
	"pattern": true, "format": true, "minItems": true,
}

var dropped = map[string]bool{"$schema": true, "$id": true, "$comment": true, "$anchor": true}

// SchemaError says where a response format's schema holds what Claude's
// structured outputs refuse and no rewrite keeps its meaning.
type SchemaError struct {
	// Path is a JSON pointer to the offending schema ("" for the root).
	Path   string
	Reason string
}

func (e *SchemaError) Error() string {
	at := e.Path
	if at == "" {
		at = "the root"
	}
	return "at " + at + ": " + e.Reason
}

// outputSchema rewrites a JSON Schema into the subset structured outputs
// take: every object with properties gets additionalProperties false;
// oneOf becomes anyOf; constraints the API does not enforce (minimum,
// maxLength, minItems above 1, formats it lacks, ...) move into the
// description; $schema and $id are dropped. It refuses, with a
// *SchemaError, what no rewrite keeps: an open object (no properties and
// additionalProperties not false, as a Go map gives), a recursive or an
// external $ref, an enum of objects or arrays, tuple items, and more
// optional properties (24) or union types (16) than the API takes.
// Member order is kept below the top level, whose members the SDK's map
// sends sorted; properties keep the order they were given in.
func outputSchema(raw json.RawMessage, description string) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, &SchemaError{Reason: "there is no schema"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readJSON(dec)
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			err = errors.New("text after the schema")
		}
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, &SchemaError{Reason: "the schema is not valid JSON: " + err.Error()}
	}
	root, ok := v.(object)
	if !ok {
		return nil, &SchemaError{Reason: "the schema is not a JSON object"}
	}
	r := rewriter{root: root}
	out, err := r.schema(root, "")
	if err != nil {
		return nil, err
	}
	if err := r.acyclic(); err != nil {
		return nil, err
	}
	if r.optional > maxOptionalProperties {
		return nil, &SchemaError{Reason: fmt.Sprintf("%d optional properties; structured outputs take at most %d (make some required)", r.optional, maxOptionalProperties)}
	}
	if r.unions > maxUnionTypes {
		return nil, &SchemaError{Reason: fmt.Sprintf("%d union types (anyOf, type lists); structured outputs take at most %d", r.unions, maxUnionTypes)}
	}
	o := out.(object)
	if description != "" {
		if d, ok := o.get("description"); ok {
			s, _ := d.(string)
			o = o.set("description", description+"\n\n"+s)
		} else {
			o = append(object{{"description", description}}, o...)
		}
	}
	m := make(map[string]any, len(o))
	for _, kv := range o {
		m[kv.key] = kv.val
	}
	return m, nil
}

type rewriter struct {
	root     object
	optional int
	unions   int
	refs     map[string][]string // from a schema's pointer, the local refs under it
}

func (r *rewriter) schema(v any, path string) (any, error) {
	switch s := v.(type) {
	case bool:
		return s, nil
	case object:
		return r.object(s, path)
	}
	return nil, &SchemaError{Path: path, Reason: "a schema must be an object or a boolean"}
}

func (r *rewriter) object(s object, path string) (any, error) {
	if v, ok := s.get("$ref"); ok {
		ref, _ := v.(string)
		if !strings.HasPrefix(ref, "#") {
			return nil, &SchemaError{Path: path + "/$ref", Reason: fmt.Sprintf("the reference %q is not local to the schema", ref)}
		}
		if r.refs == nil {
			r.refs = map[string][]string{}
		}
		r.refs[path] = append(r.refs[path], ref[1:])
		// The API takes nothing beside a reference.
		return object{{"$ref", ref}}, nil
	}
	out := make(object, 0, len(s)+1)
	var notes []string
	_, hasProps := s.get("properties")
	ty, _ := s.get("type")
	isObject := hasProps || ty == "object"
	if list, ok := ty.([]any); ok {
		r.unions++
		for _, t := range list {
			isObject = isObject || t == "object"
		}
	}
	if _, ok := s.get("oneOf"); ok {
		if _, both := s.get("anyOf"); both {
			return nil, &SchemaError{Path: path, Reason: "oneOf beside anyOf cannot be rewritten as anyOf"}
		}
	}
	for _, kv := range s {
		k, v := kv.key, kv.val
		p := path + "/" + escapePointer(k)
		switch {
		case dropped[k]:
			continue
		case !kept[k]:
			notes = append(notes, k+": "+compact(v))
			continue
		}
		switch k {
		case "properties", "$defs", "definitions":
			props, ok := v.(object)
			if !ok {
				return nil, &SchemaError{Path: p, Reason: k + " is not an object"}
			}
			sub := make(object, 0, len(props))
			for _, pv := range props {
				t, err := r.schema(pv.val, p+"/"+escapePointer(pv.key))
				if err != nil {
					return nil, err
				}
				sub = append(sub, member{pv.key, t})
			}
			v = sub
		case "items":
			if _, tuple := v.([]any); tuple {
				return nil, &SchemaError{Path: p, Reason: "tuple items (a list of schemas) are not taken"}
			}
			t, err := r.schema(v, p)
			if err != nil {
				return nil, err
			}
			v = t
		case "anyOf", "allOf", "oneOf":
			list, ok := v.([]any)
			if !ok {
				return nil, &SchemaError{Path: p, Reason: k + " is not a list"}
			}
			sub := make([]any, len(list))
			for i, e := range list {
				t, err := r.schema(e, p+"/"+strconv.Itoa(i))
				if err != nil {
					return nil, err
				}
				sub[i] = t
			}
			v = sub
			if k != "allOf" {
				r.unions++
				k = "anyOf"
			}
		case "additionalProperties":
			if v != false {
				if hasProps {
					continue // set to false below: the properties are the answer
				}
				return nil, &SchemaError{Path: path, Reason: "an open object (no properties, additionalProperties not false, as a map gives) is not taken: give the object properties, or use a final-answer tool"}
			}
		case "enum":
			list, _ := v.([]any)
			for _, e := range list {
				switch e.(type) {
				case object, []any:
					return nil, &SchemaError{Path: p, Reason: "an enum of objects or arrays is not taken"}
				}
			}
		case "format":
			if f, _ := v.(string); !formats[f] {
				notes = append(notes, "format: "+compact(v))
				continue
			}
		case "minItems":
			if n, _ := v.(json.Number); n != "0" && n != "1" {
				notes = append(notes, "minItems: "+compact(v))
				continue
			}
		}
		out = append(out, member{k, v})
	}
	if isObject {
		if props, ok := s.get("properties"); ok {
			req, _ := s.get("required")
			rl, _ := req.([]any)
			names := map[any]bool{}
			for _, n := range rl {
				names[n] = true
			}
			for _, pv := range props.(object) {
				if !names[pv.key] {
					r.optional++
				}
			}
			out = out.set("additionalProperties", false)
		} else if ap, ok := s.get("additionalProperties"); !ok || ap != false {
			return nil, &SchemaError{Path: path, Reason: "an open object (no properties, additionalProperties not false) is not taken: give the object properties, or use a final-answer tool"}
		}
	}
	if len(notes) > 0 {
		note := "(" + strings.Join(notes, "; ") + ")"
		if d, ok := out.get("description"); ok {
			s, _ := d.(string)
			out = out.set("description", s+" "+note)
		} else {
			out = append(out, member{"description", note})
		}
	}
	return out, nil
}

// acyclic refuses a recursive schema: one whose local references lead
// back into a schema that holds them.
func (r *rewriter) acyclic() error {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var visit func(ptr string) error
	visit = func(ptr string) error {
		switch state[ptr] {
		case visiting:
			return &SchemaError{Path: ptr, Reason: "a recursive schema (a $ref back into itself) is not taken"}
		case done:
			return nil
		}
		state[ptr] = visiting
		for from, refs := range r.refs {
			if from != ptr && !strings.HasPrefix(from, ptr+"/") && ptr != "" {
				continue
			}
			for _, ref := range refs {
				if _, ok := resolve(r.root, ref); !ok {
					return &SchemaError{Path: from + "/$ref", Reason: fmt.Sprintf("the reference %q points at nothing", "#"+ref)}
				}
				if ref == ptr || strings.HasPrefix(ptr, ref+"/") {
					return &SchemaError{Path: from + "/$ref", Reason: "a recursive schema (a $ref back into itself) is not taken"}
				}
				if err := visit(ref); err != nil {
					return err
				}
			}
		}
		state[ptr] = done
		return nil
	}
	return visit("")
}

// resolve follows a JSON pointer from root.
func resolve(root any, ptr string) (any, bool) {
	if ptr == "" {
		return root, true
	}
	if ptr[0] != '/' {
		return nil, false
	}
	v := root
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case object:
			e, ok := c.get(tok)
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func compact(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// member and object hold a JSON object in the order it was written, so
// that the schema sent lists properties as the caller did (and the model
// answers in that order).
type member struct {
	key string
	val any
}

type object []member

func (o object) get(k string) (any, bool) {
	for _, kv := range o {
		if kv.key == k {
			return kv.val, true
		}
	}
	return nil, false
}

// set replaces k's value, or appends it.
func (o object) set(k string, v any) object {
	for i := range o {
		if o[i].key == k {
			o[i].val = v
			return o
		}
	}
	return append(o, member{k, v})
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv.key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(kv.val)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// readJSON reads one value, objects as ordered objects, numbers as
// json.Number. A key given twice keeps its last value, as encoding/json
// does.
func readJSON(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var o object
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := readJSON(dec)
				if err != nil {
					return nil, err
				}
				o = o.set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			if o == nil {
				o = object{}
			}
			return o, nil
		case '[':
			list := []any{}
			for dec.More() {
				v, err := readJSON(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return list, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}
