package query

import (
	"encoding/json"
	"strconv"
)

// Schema returns the JSON Schema of a query's arguments, with the limits
// opts set, for a tool whose arguments are just a query. A tool taking
// more arguments adds its own to Properties and uses SchemaObject.
func Schema(opts ...Option) json.RawMessage {
	b, err := json.Marshal(SchemaObject(opts...))
	if err != nil {
		panic(err) // the schema is built from literals
	}
	return b
}

// SchemaObject returns the schema of Schema as a map, for a tool to extend
// (add to "properties") before marshalling.
func SchemaObject(opts ...Option) map[string]any {
	l := newConfig(opts).limits
	str := map[string]any{"type": "string", "minLength": 1, "maxLength": l.MaxString}
	opNames := make([]any, len(ops))
	for i, o := range ops {
		opNames[i] = string(o)
	}
	list := func(desc string) map[string]any {
		return map[string]any{
			"type":        "array",
			"description": desc,
			"items":       map[string]any{"$ref": "#/$defs/filter"},
			"maxItems":    l.MaxNodes,
		}
	}
	comb := func(key, desc string, v map[string]any) map[string]any {
		return map[string]any{
			"type":                 "object",
			"properties":           map[string]any{key: v},
			"required":             []any{key},
			"additionalProperties": false,
			"description":          desc,
		}
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"filter": map[string]any{"$ref": "#/$defs/filter"},
			"select": map[string]any{
				"type":        "array",
				"description": "Fields to return. Omit for the tool's default fields.",
				"items":       str,
				"maxItems":    l.MaxSelect,
			},
			"sort": map[string]any{
				"type":        "array",
				"description": "Sort keys, most significant first. Ties keep record order; records without the field sort last.",
				"maxItems":    l.MaxSort,
				"items": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"field": str,
						"desc":  map[string]any{"type": "boolean", "description": "Descending when true."},
					},
					"required":             []any{"field"},
					"additionalProperties": false,
				},
			},
			"limit": map[string]any{
				"type": "integer", "minimum": 1, "maximum": l.MaxPageSize,
				"description": "Page size (default " + strconv.Itoa(l.PageSize) + ").",
			},
			"offset": map[string]any{
				"type": "integer", "minimum": 0, "maximum": l.MaxOffset,
				"description": "Matching records to skip. Not with cursor.",
			},
			"cursor": map[string]any{
				"type": "string", "maxLength": l.MaxString,
				"description": "The next_cursor of a previous result, for the next page. Not with offset.",
			},
		},
		"additionalProperties": false,
		"$defs": map[string]any{
			"filter": map[string]any{
				"description": "A predicate {field, op, value} or a combinator {and: [...]}, {or: [...]}, {not: {...}}. " +
					"An absent field makes every predicate false except exists false; " +
					"lt/lte/gt/gte compare numbers with numbers and strings with strings only.",
				"anyOf": []any{
					map[string]any{"$ref": "#/$defs/predicate"},
					comb("and", "Every filter matches.", list("Filters that must all match.")),
					comb("or", "Any filter matches.", list("Filters of which one must match.")),
					comb("not", "The filter does not match.", map[string]any{"$ref": "#/$defs/filter"}),
				},
			},
			"predicate": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"field": map[string]any{"type": "string", "minLength": 1, "maxLength": l.MaxString, "description": "A field name (a plain key, not a path)."},
					"op":    map[string]any{"enum": opNames},
					"value": map[string]any{"description": "eq, ne: a scalar; lt, lte, gt, gte: a number or string; in, nin: an array of scalars (at most " + strconv.Itoa(l.MaxIn) + "); contains: a string (substring, or element of an array field); exists: true or false."},
					"ci":    map[string]any{"type": "boolean", "description": "contains only: ignore case."},
				},
				"required":             []any{"field", "op", "value"},
				"additionalProperties": false,
			},
		},
	}
}
