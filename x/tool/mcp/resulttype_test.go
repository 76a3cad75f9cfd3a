package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// A tools/call result lode's server builds itself carries resultType
// "complete" on a session of the 2026-07-28 revision, which requires it,
// and leaves it out for earlier revisions, whose clients do not know it:
// a good result, a tool's error, a panic, bad arguments and a call to an
// unknown tool.
func TestServerResultTypePerRevision(t *testing.T) {
	calls := []struct{ name, tool, args string }{
		{"ok", "echo", `{"text":"hi"}`},
		{"tool-error", "fail", `{}`},
		{"panic", "boom", `{}`},
		{"bad-arguments", "echo", `{"text":1}`},
		{"unknown", "nope", `{}`},
	}
	// 2026-07-28 clients skip the handshake and name the revision in each
	// request's _meta; earlier ones negotiate it in initialize.
	const newMeta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, rev := range []struct {
		version, meta, want string
	}{
		{"2024-11-05", "", ""},
		{"2025-03-26", "", ""},
		{"2025-06-18", "", ""},
		{"2025-11-25", "", ""},
		{"2026-07-28", newMeta, "complete"},
	} {
		t.Run(rev.version, func(t *testing.T) {
			// The filter makes tools/list a result lode builds too.
			s := serveLines(t, demoRegistry(t), nil, nil, mcp.WithFilter(func(_ context.Context, _ ledger.State, tools []tool.Tool) []tool.Tool { return tools }))
			if rev.meta == "" {
				s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, rev.version))
				var init struct {
					Result struct {
						ProtocolVersion string `json:"protocolVersion"`
					} `json:"result"`
				}
				if err := json.Unmarshal([]byte(s.next()), &init); err != nil || init.Result.ProtocolVersion != rev.version {
					t.Fatalf("negotiated %q (%v), want %q", init.Result.ProtocolVersion, err, rev.version)
				}
				s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			}
			s.send(`{"jsonrpc":"2.0","id":100,"method":"tools/list","params":{` + strings.TrimPrefix(rev.meta, ",") + `}}`)
			var list struct {
				Result *struct {
					ResultType *string `json:"resultType"`
					Tools      []any   `json:"tools"`
				} `json:"result"`
			}
			if line := s.next(); json.Unmarshal([]byte(line), &list) != nil || list.Result == nil || len(list.Result.Tools) != 5 {
				t.Fatalf("tools/list: %s", line)
			}
			if rt := list.Result.ResultType; (rt == nil) != (rev.want == "") || (rt != nil && *rt != rev.want) {
				t.Errorf("tools/list: resultType %v, want %q", rt, rev.want)
			}
			for i, c := range calls {
				s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s%s}}`, i+1, c.tool, c.args, rev.meta))
				line := s.next()
				var got struct {
					Result *struct {
						ResultType *string `json:"resultType"`
						IsError    bool    `json:"isError"`
						Content    []any   `json:"content"`
					} `json:"result"`
				}
				if err := json.Unmarshal([]byte(line), &got); err != nil || got.Result == nil {
					t.Fatalf("%s: not a result: %s", c.name, line)
				}
				rt := ""
				if got.Result.ResultType != nil {
					rt = *got.Result.ResultType
				}
				if rt != rev.want || (rev.want == "" && got.Result.ResultType != nil) {
					t.Errorf("%s: resultType %q, want %q: %s", c.name, rt, rev.want, line)
				}
				if got.Result.IsError != (c.name != "ok") || len(got.Result.Content) == 0 {
					t.Errorf("%s: isError %v with %d content items: %s", c.name, got.Result.IsError, len(got.Result.Content), line)
				}
			}
		})
	}
}
