package mcp

import (
	"encoding/json"
	"testing"
)

// A tools/list result loses exactly the tools that require tasks; anything
// it cannot read as a tool list passes through untouched.
func TestDropTaskTools(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"no-tasks", `{"tools":[{"name":"a"}]}`, `{"tools":[{"name":"a"}]}`},
		{"required", `{"tools":[{"name":"a"},{"name":"b","execution":{"taskSupport":"required"}}],"nextCursor":"x"}`, `{"nextCursor":"x","tools":[{"name":"a"}]}`},
		{"optional-and-forbidden-stay", `{"tools":[{"name":"a","execution":{"taskSupport":"optional"}},{"name":"b","execution":{"taskSupport":"forbidden"}}]}`,
			`{"tools":[{"name":"a","execution":{"taskSupport":"optional"}},{"name":"b","execution":{"taskSupport":"forbidden"}}]}`},
		{"all-required", `{"tools":[{"name":"b","execution":{"taskSupport":"required"}}]}`, `{"tools":[]}`},
		{"not-json", `{"taskSupport" nope`, `{"taskSupport" nope`},
		{"tools-not-a-list", `{"tools":{"taskSupport":"required"}}`, `{"tools":{"taskSupport":"required"}}`},
		{"no-tools", `{"content":[{"type":"text","text":"\"taskSupport\""}]}`, `{"content":[{"type":"text","text":"\"taskSupport\""}]}`},
		{"odd-execution", `{"tools":[{"name":"a","execution":"required","x":"taskSupport"}]}`, `{"tools":[{"name":"a","execution":"required","x":"taskSupport"}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := string(dropTaskTools(json.RawMessage(tc.in)))
			if got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}
