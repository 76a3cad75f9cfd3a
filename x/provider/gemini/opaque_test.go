package gemini

import (
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// A thread that talked to Claude holds its server tool blocks, citations
// and code execution container as artifact.Opaque in its answers; this
// adapter sends the turns without them.
func TestOpaqueArtifactsNotSent(t *testing.T) {
	claude := func(typ, data string) artifact.Opaque {
		return artifact.Opaque{Provider: "anthropic", Type: typ, Data: data}
	}
	f := newFake(t, reply{sse: true, body: sse(okText)})
	p := newTestProvider(t, f)
	tt := turns(user("Run it."), ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
		artifact.Text{Content: "Running."},
		claude("server_tool_use", `{"type":"server_tool_use","id":"srvtoolu_1","name":"bash_code_execution","input":{"command":"echo 4"}}`),
		claude("bash_code_execution_tool_result", `{"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"bash_code_execution_result","stdout":"4\n","stderr":"","return_code":0,"content":[]}}`),
		artifact.Text{Content: "It printed 4."},
		claude("citations", `[{"type":"char_location"}]`),
		claude("container", `{"id":"container_011CPR5CNjB747bTd36fQLFk","expires_at":"2025-05-23T21:13:31.749448Z"}`),
		artifact.Usage{InputTokens: 1}, artifact.Finish{Reason: "stop"},
	}}, ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{claude("y", "{}")}}, user("And now?"))
	if _, _, err := collect(p, &provider.Request{Turns: tt}); err != nil {
		t.Fatal(err)
	}
	want := `[{"parts":[{"text":"Run it."}],"role":"user"},{"parts":[{"text":"Running."},{"text":"It printed 4."}],"role":"model"},{"parts":[{"text":"And now?"}],"role":"user"}]`
	if got := mustJSON(t, dig(f.last(), "contents")); got != want {
		t.Errorf("contents =\n%s\nwant\n%s", got, want)
	}
}
