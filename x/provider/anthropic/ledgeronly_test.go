package anthropic

import (
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// Artifacts other packages keep in the ledger for their own use — a
// history policy's stored summary, approval records — are left out of the
// request, as the openai adapter leaves them out, rather than refused.
func TestLedgerOnlyArtifactsSkipped(t *testing.T) {
	call := turn(ledger.RoleAssistant, artifact.ToolCall{ID: "c1", Name: "rm", Arguments: `{}`})
	result := artifact.ToolResult{ToolCallID: "c1", Name: "rm", Content: "done"}
	pending := artifact.Pending{ToolCallID: "c1", Name: "rm", Arguments: `{}`, Reason: "destructive"}
	decision := artifact.Decision{ToolCallID: "c1", Name: "rm", Approved: true}
	summary := artifact.Summary{Content: "they talked about rm", First: 0, Last: 3}
	const resultMsg = `{"content":[{"content":[{"text":"done","type":"text"}],"tool_use_id":"c1","type":"tool_result"}],"role":"user"}`
	cases := []struct {
		name  string
		turns []ledger.Turn
		want  map[string]string
	}{
		{"summary alone in a system turn",
			[]ledger.Turn{turn(ledger.RoleSystem, summary), userTurn("hi")},
			map[string]string{"system": `null`, "messages": `[{"content":[{"text":"hi","type":"text"}],"role":"user"}]`}},
		{"summary beside system text",
			[]ledger.Turn{turn(ledger.RoleSystem, artifact.Text{Content: "be brief"}, summary), userTurn("hi")},
			map[string]string{"system": `[{"text":"be brief","type":"text"}]`}},
		{"summary in a user turn",
			[]ledger.Turn{turn(ledger.RoleUser, summary, artifact.Text{Content: "hi"})},
			map[string]string{"messages": `[{"content":[{"text":"hi","type":"text"}],"role":"user"}]`}},
		{"pending before its result",
			[]ledger.Turn{userTurn("go"), call, turn(ledger.RoleTool, pending), turn(ledger.RoleTool, result)},
			map[string]string{"messages.2": resultMsg, "messages.3": `null`}},
		{"decision beside its result",
			[]ledger.Turn{userTurn("go"), call, turn(ledger.RoleTool, pending), turn(ledger.RoleTool, decision, result)},
			map[string]string{"messages.2": resultMsg, "messages.3": `null`}},
		{"approval records after user text",
			[]ledger.Turn{userTurn("go"), call, turn(ledger.RoleTool, result), userTurn("next"), turn(ledger.RoleTool, pending, decision)},
			map[string]string{"messages.2": `{"content":[{"content":[{"text":"done","type":"text"}],"tool_use_id":"c1","type":"tool_result"},{"text":"next","type":"text"}],"role":"user"}`, "messages.3": `null`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, textAnswer("ok"))
			if _, _, err := collect(f.provider(t, WithCache(CacheOff)), req(c.turns...)); err != nil {
				t.Fatal(err)
			}
			body := f.body(0)
			for path, want := range c.want {
				var keys []any
				for _, k := range strings.Split(path, ".") {
					if n, err := parseIndex(k); err == nil {
						keys = append(keys, n)
					} else {
						keys = append(keys, k)
					}
				}
				if got := js(at(body, keys...)); got != want {
					t.Errorf("%s = %s\nwant %s", path, got, want)
				}
			}
		})
	}
}
