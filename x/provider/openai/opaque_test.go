package openai

import (
	"encoding/json"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// A thread that talked to Claude holds its server tool blocks, citations
// and code execution container as artifact.Opaque; this adapter sends the
// turns without them.
func TestOpaqueArtifactsNotSent(t *testing.T) {
	f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
	p := f.provider(t)
	claude := func(typ, data string) artifact.Opaque {
		return artifact.Opaque{Provider: "anthropic", Type: typ, Data: data}
	}
	req := &provider.Request{Turns: []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Weather?"}, claude("x", "{}")}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
			artifact.Text{Content: "Searching."},
			claude("server_tool_use", `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"weather"}}`),
			claude("web_search_tool_result", `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}`),
			artifact.Text{Content: "Sunny."},
			claude("citations", `[{"type":"web_search_result_location","url":"https://example.invalid/"}]`),
			claude("container", `{"id":"container_011CPR5CNjB747bTd36fQLFk","expires_at":"2025-05-23T21:13:31.749448Z"}`),
			artifact.Finish{Reason: "stop"},
		}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{claude("y", "{}")}},
		{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: "Be brief."}, artifact.Opaque{Provider: "other", Type: "z", Data: "not json"}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "And tomorrow?"}}},
	}}
	if _, _, err := providertest.CollectContext(t.Context(), p, req); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(f.requests()[0].Body["messages"])
	want := `[{"content":"Weather?","role":"user"},{"content":[{"text":"Searching.","type":"text"},{"text":"Sunny.","type":"text"}],"role":"assistant"},{"content":"Be brief.","role":"system"},{"content":"And tomorrow?","role":"user"}]`
	if string(got) != want {
		t.Fatalf("messages =\n%s\nwant\n%s", got, want)
	}
}
