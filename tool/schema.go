package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

type compiledSchema struct {
	raw      json.RawMessage
	resolved *jsonschema.Resolved
	// quick proves common arguments valid without the full validator.
	quick *quickNode
}

// ValidateSchema reports whether schema can describe a tool's arguments: a
// valid JSON Schema (draft 2020-12 or draft-07) whose type is "object".
// An empty schema is accepted and means an object with no declared
// properties.
func ValidateSchema(schema json.RawMessage) error {
	_, err := compileSchema(schema)
	return err
}

func compileSchema(raw json.RawMessage) (*compiledSchema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = emptyObjectSchema
	}
	if !json.Valid(raw) {
		return nil, errors.New("schema is not valid JSON")
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, errors.New("schema must be a JSON object")
	}
	var typ any
	if t, ok := probe["type"]; ok {
		_ = json.Unmarshal(t, &typ)
	}
	if typ != "object" {
		return nil, fmt.Errorf(`schema must have "type": "object" (tool arguments are a JSON object), got type %v`, typeString(probe["type"]))
	}
	var doc any
	_ = json.Unmarshal(raw, &doc)
	if err := checkTypes(doc, "#"); err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	res, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	compact := new(bytes.Buffer)
	if err := json.Compact(compact, raw); err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	return &compiledSchema{raw: compact.Bytes(), resolved: res, quick: compileQuick(compact.Bytes())}, nil
}

func typeString(raw json.RawMessage) string {
	if raw == nil {
		return "(missing)"
	}
	return string(raw)
}

func (c *compiledSchema) validate(args map[string]any) error {
	if err := c.resolved.Validate(args); err != nil {
		return fmt.Errorf("arguments do not match the schema: %w", err)
	}
	return nil
}

var jsonTypes = map[string]bool{
	"object": true, "array": true, "string": true, "number": true,
	"integer": true, "boolean": true, "null": true,
}

// checkTypes rejects "type" values that name no JSON type, which the
// validator would otherwise accept and then match nothing against. It walks
// only the keywords that hold subschemas, so a "type" inside a default or
// an enum value is left alone.
func checkTypes(node any, at string) error {
	m, ok := node.(map[string]any)
	if !ok {
		return nil
	}
	if t, ok := m["type"]; ok {
		var list []any
		switch t := t.(type) {
		case string:
			list = []any{t}
		case []any:
			list = t
		default:
			return fmt.Errorf(`%s: "type" must be a string or an array of strings`, at)
		}
		for _, v := range list {
			if s, ok := v.(string); !ok || !jsonTypes[s] {
				return fmt.Errorf(`%s: "type" %v is not a JSON type`, at, v)
			}
		}
	}
	for _, k := range []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"} {
		if sub, ok := m[k].(map[string]any); ok {
			for name, s := range sub {
				if err := checkTypes(s, at+"/"+k+"/"+name); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "additionalItems"} {
		if err := checkTypes(m[k], at+"/"+k); err != nil {
			return err
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"} {
		if arr, ok := m[k].([]any); ok {
			for i, s := range arr {
				if err := checkTypes(s, fmt.Sprintf("%s/%s/%d", at, k, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
