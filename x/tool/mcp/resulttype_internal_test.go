package mcp

import (
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkComplete measures what marking a result costs a 2026-07-28
// call (earlier revisions pay only the version check).
func BenchmarkComplete(b *testing.B) {
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		req := &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: "echo", Meta: sdk.Meta{sdk.MetaKeyProtocolVersion: rev}}}
		res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a result of some length, as a tool would return it"}},
			StructuredContent: map[string]any{"temp": 21, "sky": "clear"}}
		b.Run(rev, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if complete(req, res) == nil {
					b.Fatal("nil")
				}
			}
		})
	}
}

// complete changes nothing but the mark: every field a result had is in
// the marked copy, and the original is left as it was.
func TestCompleteKeepsEveryField(t *testing.T) {
	req := &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: "x", Meta: sdk.Meta{sdk.MetaKeyProtocolVersion: "2026-07-28"}}}
	res := &sdk.CallToolResult{Meta: sdk.Meta{"k": "v"}, Content: []sdk.Content{&sdk.TextContent{Text: "t"}},
		StructuredContent: map[string]any{"a": 1.0}, IsError: true}
	before, _ := json.Marshal(res)
	got, err := json.Marshal(complete(req, res))
	if err != nil {
		t.Fatal(err)
	}
	var want, have map[string]any
	_ = json.Unmarshal(before, &want)
	_ = json.Unmarshal(got, &have)
	want["resultType"] = "complete"
	if !reflect.DeepEqual(have, want) {
		t.Fatalf("marked %s, from %s", got, before)
	}
	if after, _ := json.Marshal(res); string(after) != string(before) {
		t.Fatalf("the original changed: %s", after)
	}
}
