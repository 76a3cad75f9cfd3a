package query_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/query"
)

func TestSchema(t *testing.T) {
	if err := tool.ValidateSchema(query.Schema()); err != nil {
		t.Fatalf("Schema is not a valid tool schema: %v", err)
	}
	reg := tool.NewRegistry()
	var got map[string]any
	err := reg.Register(tool.Tool{Name: "q", Schema: query.Schema()}, func(ctx context.Context, sb tool.Sandbox, args map[string]any) (any, error) {
		got = args
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := reg.Lookup("q")
	good := []string{
		`{}`,
		`{"filter": {"field": "a", "op": "eq", "value": null}}`,
		`{"filter": {"and": [{"not": {"field": "a", "op": "in", "value": [1, "x"]}}, {"or": []}]}, "select": ["a"], "sort": [{"field": "a", "desc": true}], "limit": 200, "offset": 3}`,
		`{"filter": {"field": "t", "op": "contains", "value": "x", "ci": true}, "cursor": "abc"}`,
	}
	for _, g := range good {
		if _, err := b.Call(context.Background(), tool.NoSandbox(), g); err != nil {
			t.Errorf("schema refused %s: %v", g, err)
		}
		// Whatever the schema lets through, Parse reads (cursor aside).
		if !strings.Contains(g, "cursor") {
			if _, err := query.Parse(got); err != nil {
				t.Errorf("Parse refused what the schema accepts, %s: %v", g, err)
			}
		}
	}
	bad := []string{
		`{"filter": {"field": "a", "op": "regex", "value": "x"}}`,
		`{"filter": {"field": "a", "op": "eq"}}`,
		`{"filter": {"and": [{"field": "a"}]}}`,
		`{"limit": 201}`,
		`{"sort": [{"field": "a", "order": "asc"}]}`,
		`{"extra": 1}`,
	}
	for _, s := range bad {
		_, err := b.Call(context.Background(), tool.NoSandbox(), s)
		var ae *tool.ArgumentsError
		if !errors.As(err, &ae) {
			t.Errorf("schema accepted %s (err %v)", s, err)
		}
	}
}

func TestSchemaLimits(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(query.Schema(query.WithLimits(query.Limits{MaxPageSize: 20})), &s); err != nil {
		t.Fatal(err)
	}
	limit := s["properties"].(map[string]any)["limit"].(map[string]any)
	if limit["maximum"] != 20.0 || limit["description"] != "Page size (default 20)." {
		t.Errorf("limit schema = %v", limit)
	}
	// A tool adds its own arguments to the object.
	obj := query.SchemaObject()
	obj["properties"].(map[string]any)["project"] = map[string]any{"type": "string"}
	raw, _ := json.Marshal(obj)
	if err := tool.ValidateSchema(raw); err != nil {
		t.Errorf("extended schema: %v", err)
	}
}
