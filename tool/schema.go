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
	return &compiledSchema{raw: compact.Bytes(), resolved: res}, nil
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
