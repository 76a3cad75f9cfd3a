package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Limits of strict mode as OpenAI documents them.
const (
	strictMaxDepth      = 10
	strictMaxProperties = 5000
	strictMaxEnumValues = 1000
)

// strictKeywords are the schema keywords strict mode accepts. Anything else
// (minLength, allOf, patternProperties, default, $schema, ...) disqualifies
// a schema: the server would refuse it.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true, "$ref": true,
	"$defs": true, "definitions": true, "description": true, "title": true,
	"pattern": true, "format": true, "multipleOf": true, "minimum": true,
	"maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"minItems": true, "maxItems": true,
}

var strictTypes = map[string]bool{
	"string": true, "number": true, "integer": true, "boolean": true,
	"object": true, "array": true, "null": true,
}

var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

// CheckStrict reports why schema cannot be offered in strict mode, or nil
// when it can: the root is an object; every object schema sets
// additionalProperties to false and requires all its properties; every
// keyword is one strict mode supports; nesting, property and enum counts
// stay within OpenAI's limits. An empty schema does not qualify.
func CheckStrict(schema json.RawMessage) error {
	if len(schema) == 0 {
		return errors.New("schema is empty")
	}
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		return fmt.Errorf("schema is not valid JSON: %w", err)
	}
	m, ok := root.(map[string]any)
	if !ok {
		return errors.New("schema is not a JSON object")
	}
	if !hasType(m, "object") {
		return errors.New(`root schema must have "type": "object"`)
	}
	if _, ok := m["anyOf"]; ok {
		return errors.New("root schema must not be anyOf")
	}
	var c strictChecker
	return c.check(m, "#", 1)
}

type strictChecker struct {
	props, enums int
}

func hasType(m map[string]any, want string) bool {
	switch t := m["type"].(type) {
	case string:
		return t == want
	case []any:
		return slices.Contains(t, any(want))
	}
	return false
}

func (c *strictChecker) check(v any, path string, depth int) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: a schema must be an object", path)
	}
	if depth > strictMaxDepth && hasType(m, "object") {
		return fmt.Errorf("%s: objects nested deeper than %d levels", path, strictMaxDepth)
	}
	for _, k := range sortedKeys(m) { // sorted: the same complaint every time
		if !strictKeywords[k] {
			return fmt.Errorf("%s: keyword %q is not supported", path, k)
		}
	}
	_, hasT := m["type"]
	_, hasAny := m["anyOf"]
	_, hasRef := m["$ref"]
	_, hasEnum := m["enum"]
	_, hasConst := m["const"]
	if !hasT && !hasAny && !hasRef && !hasEnum && !hasConst {
		return fmt.Errorf("%s: schema has no type", path)
	}
	if hasT {
		if err := checkTypes(m["type"], path); err != nil {
			return err
		}
	}
	if ref, ok := m["$ref"]; ok {
		s, _ := ref.(string)
		if !strings.HasPrefix(s, "#") {
			return fmt.Errorf("%s: $ref %v is not local to the schema", path, ref)
		}
	}
	if f, ok := m["format"]; ok {
		s, _ := f.(string)
		if !strictFormats[s] {
			return fmt.Errorf("%s: format %v is not supported", path, f)
		}
	}
	if e, ok := m["enum"]; ok {
		vals, ok := e.([]any)
		if !ok {
			return fmt.Errorf("%s: enum is not an array", path)
		}
		if c.enums += len(vals); c.enums > strictMaxEnumValues {
			return fmt.Errorf("%s: more than %d enum values in all", path, strictMaxEnumValues)
		}
	}
	if hasType(m, "object") {
		if err := c.checkObject(m, path, depth); err != nil {
			return err
		}
	} else if _, ok := m["properties"]; ok {
		return fmt.Errorf("%s: properties on a schema that is not an object", path)
	}
	if hasType(m, "array") {
		items, ok := m["items"]
		if !ok {
			return fmt.Errorf("%s: array has no items schema", path)
		}
		if err := c.check(items, path+"/items", depth+1); err != nil {
			return err
		}
	}
	if a, ok := m["anyOf"]; ok {
		branches, ok := a.([]any)
		if !ok || len(branches) == 0 {
			return fmt.Errorf("%s: anyOf is not a non-empty array", path)
		}
		for i, b := range branches {
			if err := c.check(b, fmt.Sprintf("%s/anyOf/%d", path, i), depth+1); err != nil {
				return err
			}
		}
	}
	for _, key := range []string{"$defs", "definitions"} {
		d, ok := m[key]
		if !ok {
			continue
		}
		defs, ok := d.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %s is not an object", path, key)
		}
		for _, name := range sortedKeys(defs) {
			if err := c.check(defs[name], path+"/"+key+"/"+name, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkTypes(t any, path string) error {
	var names []any
	switch t := t.(type) {
	case string:
		names = []any{t}
	case []any:
		names = t
	default:
		return fmt.Errorf("%s: type is neither a string nor an array", path)
	}
	if len(names) == 0 {
		return fmt.Errorf("%s: type is an empty array", path)
	}
	for _, n := range names {
		s, _ := n.(string)
		if !strictTypes[s] {
			return fmt.Errorf("%s: type %v is not supported", path, n)
		}
	}
	return nil
}

func (c *strictChecker) checkObject(m map[string]any, path string, depth int) error {
	if ap, ok := m["additionalProperties"].(bool); !ok || ap {
		return fmt.Errorf("%s: object must set additionalProperties to false", path)
	}
	var props map[string]any
	if p, ok := m["properties"]; ok {
		if props, ok = p.(map[string]any); !ok {
			return fmt.Errorf("%s: properties is not an object", path)
		}
	}
	if c.props += len(props); c.props > strictMaxProperties {
		return fmt.Errorf("%s: more than %d properties in all", path, strictMaxProperties)
	}
	var req []any
	if r, ok := m["required"]; ok {
		if req, ok = r.([]any); !ok {
			return fmt.Errorf("%s: required is not an array", path)
		}
	}
	listed := make(map[string]bool, len(req))
	for _, r := range req {
		s, ok := r.(string)
		if !ok {
			return fmt.Errorf("%s: required lists %v, which is not a name", path, r)
		}
		if _, ok := props[s]; !ok {
			return fmt.Errorf("%s: required names %q, which is not a property", path, s)
		}
		listed[s] = true
	}
	for _, name := range sortedKeys(props) {
		if !listed[name] {
			return fmt.Errorf("%s: property %q is not required", path, name)
		}
		if err := c.check(props[name], path+"/properties/"+name, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
