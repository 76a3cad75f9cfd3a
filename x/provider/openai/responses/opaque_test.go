package responses

import (
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// A thread that talked to Claude holds its server tool blocks, citations
// and code execution container as artifact.Opaque; this adapter sends the
// turns without them, wherever they are.
func TestOpaqueArtifactsNotSent(t *testing.T) {
	claude := func(typ, data string) artifact.Opaque {
		return artifact.Opaque{Provider: "anthropic", Type: typ, Data: data}
	}
	turns := []ledger.Turn{
		{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: "Be brief."}, artifact.Opaque{Provider: "other", Type: "z", Data: "not json"}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Run it."}, claude("x", "{}")}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
			artifact.Text{Content: "Running."},
			claude("server_tool_use", `{"type":"server_tool_use","id":"srvtoolu_1","name":"bash_code_execution","input":{"command":"echo 4"}}`),
			claude("bash_code_execution_tool_result", `{"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"bash_code_execution_result","stdout":"4\n","stderr":"","return_code":0,"content":[]}}`),
			artifact.Text{Content: "It printed 4."},
			claude("citations", `[{"type":"char_location"}]`),
			artifact.ToolCall{ID: "call_1", Name: "note", Arguments: `{}`},
			claude("container", `{"id":"container_011CPR5CNjB747bTd36fQLFk","expires_at":"2025-05-23T21:13:31.749448Z"}`),
			artifact.Finish{Reason: "tool_calls"},
		}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "call_1", Name: "note", Content: "noted"}, claude("y", "{}")}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "And now?"}}},
	}
	f := newFake(t, sse(textAnswer("ok")...))
	if _, _, err := providertest.CollectContext(t.Context(), f.provider(t), &provider.Request{Turns: turns}); err != nil {
		t.Fatal(err)
	}
	want := asJSON(t, `[
		{"type":"message","role":"system","content":"Be brief."},
		{"type":"message","role":"user","content":"Run it."},
		{"type":"message","role":"assistant","content":"Running."},
		{"type":"message","role":"assistant","content":"It printed 4."},
		{"type":"function_call","call_id":"call_1","name":"note","arguments":"{}"},
		{"type":"function_call_output","call_id":"call_1","output":"noted"},
		{"type":"message","role":"user","content":"And now?"}]`)
	if got := f.requests()[0].Body["input"]; !reflect.DeepEqual(got, want) {
		t.Errorf("input =\n%s\nwant\n%s", mustJSON(got), mustJSON(want))
	}
}
