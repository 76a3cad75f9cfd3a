package gemini

import (
	"context"
	"errors"
	"strings"
	"testing"

	"cloud.google.com/go/auth"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

func TestRequestConfig(t *testing.T) {
	f := newFake(t, reply{sse: true, body: sse(okText)})
	p := newTestProvider(t, f, WithThinkingBudget(1024), WithThoughts(true), WithHeader("X-Team", "lode"), WithAPIVersion("v1"))
	temp, topP := 0.25, 0.5
	req := &provider.Request{
		Turns: turns(
			ledger.Turn{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: "Be brief."}}},
			ledger.Turn{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: "Be kind."}, artifact.Summary{Content: "kept for history"}}},
			user("hi"),
			ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{
				artifact.Image{Data: []byte{1, 2, 3}, MIMEType: "image/jpeg"},
				artifact.Image{URL: "gs://bucket/cat.png"},
				artifact.ResourceLink{URI: "file:///a.txt", Name: "a.txt"},
			}},
		),
		Tools:          []tool.Tool{{Name: "lookup", Description: "Look up", Schema: []byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}, {Name: "now"}},
		ToolChoice:     provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: "lookup"},
		MaxTokens:      256,
		Temperature:    &temp,
		TopP:           &topP,
		Stop:           []string{"END"},
		ResponseFormat: &provider.ResponseFormat{Type: provider.ResponseFormatJSONSchema, Name: "answer", Schema: []byte(`{"type":"object","properties":{"a":{"type":"integer"}}}`)},
	}
	if _, _, err := collect(p, req); err != nil {
		t.Fatal(err)
	}
	if r := f.requests()[0]; r.header.Get("X-Team") != "lode" || r.path != "/v1/models/gemini-2.5-flash:streamGenerateContent" {
		t.Errorf("header %q, path %s", r.header.Get("X-Team"), r.path)
	}
	b := f.last()
	checks := map[string]string{
		"systemInstruction": `{"parts":[{"text":"Be brief."},{"text":"Be kind."}],"role":"user"}`,
		"contents":          `[{"parts":[{"text":"hi"},{"inlineData":{"data":"AQID","mimeType":"image/jpeg"}},{"fileData":{"fileUri":"gs://bucket/cat.png","mimeType":"image/png"}},{"text":"[resource link a.txt file:///a.txt]"}],"role":"user"}]`,
		"tools":             `[{"functionDeclarations":[{"description":"Look up","name":"lookup","parametersJsonSchema":{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"}},{"name":"now","parametersJsonSchema":{"properties":{},"type":"object"}}]}]`,
		"toolConfig":        `{"functionCallingConfig":{"allowedFunctionNames":["lookup"],"mode":"ANY"}}`,
		"generationConfig":  `{"maxOutputTokens":256,"responseJsonSchema":{"properties":{"a":{"type":"integer"}},"type":"object"},"responseMimeType":"application/json","stopSequences":["END"],"temperature":0.25,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024},"topP":0.5}`,
	}
	for k, want := range checks {
		if got := mustJSON(t, b[k]); got != want {
			t.Errorf("%s:\n%s\nwant\n%s", k, got, want)
		}
	}
	if !p.SupportsResponseFormat(provider.ResponseFormatJSONSchema) || !p.SupportsResponseFormat(provider.ResponseFormatJSONObject) || p.SupportsResponseFormat("xml") {
		t.Error("SupportsResponseFormat")
	}
}

func TestToolChoiceModes(t *testing.T) {
	tools := []tool.Tool{{Name: "a"}}
	for mode, want := range map[string]string{
		provider.ToolChoiceAuto:     `{"functionCallingConfig":{"mode":"AUTO"}}`,
		provider.ToolChoiceNone:     `{"functionCallingConfig":{"mode":"NONE"}}`,
		provider.ToolChoiceRequired: `{"functionCallingConfig":{"mode":"ANY"}}`,
		"":                          `null`,
	} {
		f := newFake(t, reply{sse: true, body: sse(okText)})
		p := newTestProvider(t, f)
		if _, _, err := collect(p, &provider.Request{Turns: turns(user("x")), Tools: tools, ToolChoice: provider.ToolChoice{Mode: mode}}); err != nil {
			t.Fatal(err)
		}
		if got := mustJSON(t, f.last()["toolConfig"]); got != want {
			t.Errorf("%q: %s, want %s", mode, got, want)
		}
	}
}

func TestJSONObjectFormat(t *testing.T) {
	f := newFake(t, reply{sse: true, body: sse(okText)})
	p := newTestProvider(t, f)
	if _, _, err := collect(p, &provider.Request{Turns: turns(user("x")), ResponseFormat: &provider.ResponseFormat{Type: provider.ResponseFormatJSONObject}}); err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(t, f.last()["generationConfig"]); got != `{"responseMimeType":"application/json"}` {
		t.Errorf("generationConfig %s", got)
	}
}

// A request that cannot be sent is a *RequestError, and nothing is sent.
func TestRequestErrors(t *testing.T) {
	cases := []struct {
		name string
		req  *provider.Request
		msg  string
	}{
		{"nothing to send", &provider.Request{}, "no user, assistant or tool turn"},
		{"system image", &provider.Request{Turns: turns(ledger.Turn{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Image{URL: "x.png"}}}, user("x"))}, "turn 0 (system): a system turn carries text only"},
		{"tool choice names no tool", &provider.Request{Turns: turns(user("x")), Tools: []tool.Tool{{Name: "a"}}, ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: "b"}}, `names "b"`},
		{"bad tool choice", &provider.Request{Turns: turns(user("x")), Tools: []tool.Tool{{Name: "a"}}, ToolChoice: provider.ToolChoice{Mode: "sometimes"}}, `tool choice "sometimes"`},
		{"broken schema", &provider.Request{Turns: turns(user("x")), Tools: []tool.Tool{{Name: "a", Schema: []byte("{")}}}, `tool "a": the schema is not JSON`},
		{"image without type", &provider.Request{Turns: turns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Image{URL: "https://x/y"}}})}, "names no MIME type"},
		{"result without a tool", &provider.Request{Turns: turns(user("x"), ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "zz", Content: "1"}}})}, `tool result "zz" names no tool`},
		{"signature not base64", &provider.Request{Turns: turns(user("x"), ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Reasoning{Field: FieldSignature, Signature: "%%%"}, artifact.Text{Content: "a"}}})}, "is not base64"},
		{"format type", &provider.Request{Turns: turns(user("x")), ResponseFormat: &provider.ResponseFormat{Type: "yaml"}}, `response format "yaml"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			p := newTestProvider(t, f)
			_, _, err := collect(p, c.req)
			var re *RequestError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %q", err, c.msg)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// Reasoning another adapter wrote is not sent to Gemini.
func TestForeignReasoningNotSent(t *testing.T) {
	f := newFake(t, reply{sse: true, body: sse(okText)})
	p := newTestProvider(t, f)
	tt := turns(user("x"), ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
		artifact.Reasoning{Content: "claude thinking", Signature: "EqQBCkYIBxgCKkA="},
		artifact.Reasoning{Content: "kimi thinking", Field: "reasoning_details", ContentField: "reasoning_content", Data: `[]`},
		artifact.Text{Content: "answer"}, artifact.Usage{InputTokens: 1}, artifact.Finish{Reason: "stop"},
	}}, user("more"))
	if _, _, err := collect(p, &provider.Request{Turns: tt}); err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(t, dig(f.last(), "contents", 1)); got != `{"parts":[{"text":"answer"}],"role":"model"}` {
		t.Errorf("model content %s", got)
	}
}

func TestNewChecks(t *testing.T) {
	none := WithEnv(func(string) string { return "" })
	cases := []struct {
		name string
		opts []Option
		is   error
		msg  string
	}{
		{"no model", []Option{none, WithAPIKey("k")}, ErrNoModel, ""},
		{"no key", []Option{none, WithModel("m")}, ErrNoAPIKey, ""},
		{"vertex without project", []Option{none, WithModel("m"), WithBackend(BackendVertexAI)}, ErrNoVertexAuth, ""},
		{"bad backend", []Option{none, WithModel("m"), WithBackend("azure")}, ErrOption, ""},
		{"bad level", []Option{none, WithModel("m"), WithAPIKey("k"), WithThinkingLevel("max")}, ErrOption, ""},
		{"bad budget", []Option{none, WithModel("m"), WithAPIKey("k"), WithThinkingBudget(-5)}, ErrOption, ""},
		{"bad url", []Option{none, WithModel("m"), WithAPIKey("k"), WithBaseURL("ftp://x")}, nil, `base URL "ftp://x" is not an http(s) URL`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.opts...)
			if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	f := newFake(t, reply{sse: true, body: sse(okText)})
	env := map[string]string{EnvAPIKey: "gemini-key", EnvGoogleAPIKey: "google-key", EnvBaseURL: f.srv.URL}
	p, err := New(WithModel("models/gemini-2.5-pro"), WithEnv(func(k string) string { return env[k] }))
	if err != nil {
		t.Fatal(err)
	}
	if p.Model() != "gemini-2.5-pro" || p.BaseURL() != f.srv.URL || p.Backend() != BackendGeminiAPI {
		t.Fatalf("provider %s %s %s", p.Model(), p.BaseURL(), p.Backend())
	}
	if _, _, err := collect(p, userText("x")); err != nil {
		t.Fatal(err)
	}
	if k := f.requests()[0].header.Get("X-Goog-Api-Key"); k != "google-key" {
		t.Errorf("key %q: GOOGLE_API_KEY wins, as in the SDK", k)
	}
}

type staticToken string

func (s staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: string(s), Type: "Bearer"}, nil
}

func TestVertex(t *testing.T) {
	f := newFake(t, reply{sse: true, body: sse(okText)}, reply{sse: true, body: sse(okText)}, reply{sse: true, body: sse(okText)})
	creds := auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken("vertex-token")})
	p, err := New(WithModel("gemini-2.5-flash"), WithBackend(BackendVertexAI), WithProject("my-proj"), WithLocation("us-central1"),
		WithCredentials(creds), WithBaseURL(f.srv.URL), WithEnv(func(string) string { return "" }))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := collect(p, userText("x")); err != nil {
		t.Fatal(err)
	}
	r := f.requests()[0]
	if r.path != "/v1beta1/projects/my-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent" || r.query != "alt=sse" {
		t.Errorf("path %s?%s", r.path, r.query)
	}
	if a := r.header.Get("Authorization"); a != "Bearer vertex-token" {
		t.Errorf("authorization %q", a)
	}
	if k := r.header.Get("X-Goog-Api-Key"); k != "" {
		t.Errorf("an API key was sent with credentials: %q", k)
	}

	// The project and region from the environment, credentials given.
	env0 := map[string]string{EnvUseVertex: "1", EnvProject: "env-proj", EnvRegion: "europe-west4", EnvVertexURL: f.srv.URL}
	p, err = New(WithModel("gemini-2.5-flash"), WithCredentials(creds), WithEnv(func(k string) string { return env0[k] }))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := collect(p, userText("x")); err != nil {
		t.Fatal(err)
	}
	if r := f.requests()[1]; r.path != "/v1beta1/projects/env-proj/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent" {
		t.Errorf("path from the environment %s", r.path)
	}

	// Express mode: an API key and no project.
	env := map[string]string{EnvUseVertex: "true", EnvAPIKey: "express-key", EnvVertexURL: f.srv.URL}
	p, err = New(WithModel("gemini-2.5-flash"), WithEnv(func(k string) string { return env[k] }))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := collect(p, userText("x")); err != nil {
		t.Fatal(err)
	}
	r = f.requests()[2]
	if r.path != "/v1beta1/publishers/google/models/gemini-2.5-flash:streamGenerateContent" || r.header.Get("X-Goog-Api-Key") != "express-key" {
		t.Errorf("express: %s key %q", r.path, r.header.Get("X-Goog-Api-Key"))
	}
}

func TestContextWindow(t *testing.T) {
	for m, want := range map[string]int{"gemini-2.5-pro": 1_048_576, "models/gemini-1.5-pro-002": 2_097_152, "gemini-3-flash-preview": 1_048_576, "gemma-3": 0} {
		if got, _ := ContextWindow(m); got != want {
			t.Errorf("%s: %d, want %d", m, got, want)
		}
	}
}

func TestThinkingPerInvocation(t *testing.T) {
	f := newFake(t, reply{sse: true, body: sse(okText)}, reply{sse: true, body: sse(okText)})
	p := newTestProvider(t, f, WithThinkingBudget(2048), WithThoughts(true))
	req := &provider.Request{Turns: turns(user("x"))}
	if err := provider.Resolve(context.Background(), ledger.NewThread(), req, WithThinking(0)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := collect(p, req); err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(t, f.last()["generationConfig"]); got != `{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":0}}` {
		t.Errorf("generationConfig %s", got)
	}
	bad := &provider.Request{Turns: turns(user("x"))}
	_ = provider.Resolve(context.Background(), ledger.NewThread(), bad, WithThinking(-2))
	var re *RequestError
	if _, _, err := collect(p, bad); !errors.As(err, &re) {
		t.Fatalf("err = %v", err)
	}
}
