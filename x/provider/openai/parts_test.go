package openai

import (
	"errors"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// afterCall is a history in which the model called "shot" and the tool
// answered with r.
func afterCall(r artifact.ToolResult) *provider.Request {
	r.ToolCallID, r.Name = "call_1", "shot"
	return &provider.Request{Turns: []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "go"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: "call_1", Name: "shot", Arguments: "{}"}}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{r}},
	}}
}

func TestToolResultParts(t *testing.T) {
	size := int64(2048)
	cases := []struct {
		name   string
		result artifact.ToolResult
		want   string
	}{{
		name:   "content is sent as it is and parts are not added to it",
		result: artifact.ToolResult{Content: "[image image/png, 4 bytes]", Parts: artifact.List{artifact.Image{MIMEType: "image/png", Data: []byte("\x89PNG")}}},
		want:   "[image image/png, 4 bytes]",
	}, {
		name:   "an image alone is described, not sent",
		result: artifact.ToolResult{Parts: artifact.List{artifact.Image{MIMEType: "image/png", Data: []byte("\x89PNG")}}},
		want:   "[image image/png, 4 bytes — not shown: tool results reach the model as text only]",
	}, {
		name:   "an image by URL",
		result: artifact.ToolResult{Parts: artifact.List{artifact.Image{URL: "https://example.invalid/a.png"}}},
		want:   "[image https://example.invalid/a.png — not shown: tool results reach the model as text only]",
	}, {
		name:   "audio",
		result: artifact.ToolResult{Parts: artifact.List{artifact.Audio{MIMEType: "audio/wav", Data: make([]byte, 10)}}},
		want:   "[audio audio/wav, 10 bytes — not shown: tool results reach the model as text only]",
	}, {
		name:   "a text resource is sent as text",
		result: artifact.ToolResult{Parts: artifact.List{artifact.Resource{URI: "file:///notes.md", MIMEType: "text/markdown", Text: "# Notes"}}},
		want:   "[resource file:///notes.md]\n# Notes",
	}, {
		name:   "a binary resource",
		result: artifact.ToolResult{Parts: artifact.List{artifact.Resource{URI: "file:///a.pdf", Blob: []byte("%PDF")}}},
		want:   "[resource file:///a.pdf (of unknown type), 4 bytes — not shown: tool results reach the model as text only]",
	}, {
		name: "a resource link",
		result: artifact.ToolResult{Parts: artifact.List{artifact.ResourceLink{
			URI: "file:///big.log", Name: "big.log", Description: "the full log", Size: &size}}},
		want: "[resource link file:///big.log (big.log): the full log]",
	}, {
		name: "several parts, in order, with an unknown kind",
		result: artifact.ToolResult{Parts: artifact.List{
			artifact.Text{Content: "two files"},
			artifact.ResourceLink{URI: "file:///a", Title: "A"},
			artifact.Unknown{Type: "citation"},
			nil,
		}},
		want: "two files\n[resource link file:///a (A)]\n[citation — not shown: tool results reach the model as text only]",
	}, {
		name:   "no content and no parts",
		result: artifact.ToolResult{},
		want:   "(no output)",
	}, {
		name:   "only empty parts",
		result: artifact.ToolResult{Parts: artifact.List{artifact.Text{}}},
		want:   "(no output)",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
			if err := drain(t.Context(), f.provider(t), afterCall(tc.result)); err != nil {
				t.Fatal(err)
			}
			msgs := f.requests()[0].Body["messages"].([]any)
			want := map[string]any{"role": "tool", "tool_call_id": "call_1", "content": tc.want}
			if got := msgs[len(msgs)-1]; !reflect.DeepEqual(got, want) {
				t.Errorf("tool message = %s\nwant %s", mustJSON(got), mustJSON(want))
			}
		})
	}
}

func TestUserTurnResources(t *testing.T) {
	f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
	req := &provider.Request{Turns: []ledger.Turn{
		{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Resource{URI: "file:///style.md", Text: "Be brief."}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{
			artifact.Text{Content: "Compare these."},
			artifact.Resource{URI: "file:///a.txt", MIMEType: "text/plain", Text: "alpha"},
			artifact.Resource{URI: "file:///b.gif", MIMEType: "image/gif", Blob: []byte("GIF89a")},
			artifact.ResourceLink{URI: "https://example.invalid/c", Name: "c", Description: "the third"},
		}},
	}}
	if err := drain(t.Context(), f.provider(t), req); err != nil {
		t.Fatal(err)
	}
	want := toJSON(t, `[
		{"role":"system","content":"[resource file:///style.md]\nBe brief."},
		{"role":"user","content":[
			{"type":"text","text":"Compare these."},
			{"type":"text","text":"[resource file:///a.txt]\nalpha"},
			{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGODlh"}},
			{"type":"text","text":"[resource link https://example.invalid/c (c): the third]"}
		]}
	]`)
	if got := f.requests()[0].Body["messages"]; !reflect.DeepEqual(got, want) {
		t.Errorf("messages =\n%s", mustJSON(got))
	}
}

func TestUnsendableArtifacts(t *testing.T) {
	turn := func(role ledger.Role, a artifact.Artifact) []ledger.Turn {
		return []ledger.Turn{{Role: role, Artifacts: []artifact.Artifact{a}}}
	}
	cases := []struct {
		name  string
		turns []ledger.Turn
		want  string
	}{
		{"audio from a user", turn(ledger.RoleUser, artifact.Audio{MIMEType: "audio/wav", Data: make([]byte, 8)}),
			"openai: request: turn 0 (user): a user turn cannot carry audio (audio/wav, 8 bytes): go-openai's chat messages take only text and images"},
		{"audio in a system turn", turn(ledger.RoleSystem, artifact.Audio{}),
			"openai: request: turn 0 (system): a system turn cannot carry audio (of unknown type, 0 bytes): go-openai's chat messages take only text and images"},
		{"a binary resource that is not an image", turn(ledger.RoleUser, artifact.Resource{URI: "file:///a.pdf", MIMEType: "application/pdf", Blob: []byte("%PDF")}),
			"openai: request: turn 0 (user): a user turn cannot carry resource file:///a.pdf (application/pdf, 4 bytes): only text and, from a user, images can be sent"},
		{"an image resource in a system turn", turn(ledger.RoleSystem, artifact.Resource{URI: "file:///a.png", MIMEType: "image/png", Blob: png}),
			"openai: request: turn 0 (system): a system turn cannot carry resource file:///a.png (image/png, 16 bytes): only text and, from a user, images can be sent"},
		{"audio in an assistant turn", turn(ledger.RoleAssistant, artifact.Audio{}),
			"openai: request: turn 0 (assistant): an assistant turn cannot carry audio"},
		{"a resource in an assistant turn", turn(ledger.RoleAssistant, artifact.Resource{URI: "u", Text: "t"}),
			"openai: request: turn 0 (assistant): an assistant turn cannot carry resource"},
		{"a resource link in a tool turn", turn(ledger.RoleTool, artifact.ResourceLink{URI: "u"}),
			"openai: request: turn 0 (tool): a tool turn cannot carry resource_link"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			err := drain(t.Context(), f.provider(t), &provider.Request{Turns: tc.turns})
			var re *RequestError
			if !errors.As(err, &re) || err.Error() != tc.want {
				t.Fatalf("err =\n%v\nwant\n%s", err, tc.want)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}
