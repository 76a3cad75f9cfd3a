package openai

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

// png is the start of a PNG file: enough for content sniffing.
var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

func TestRequestMapping(t *testing.T) {
	f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
	p := f.provider(t, WithOrganization("org-1"), WithHeader("OpenAI-Project", "proj-1"))
	no := false
	req := &provider.Request{
		Turns: []ledger.Turn{
			{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: "Be brief."}}},
			{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{
				artifact.Text{Content: "What is in these?"},
				artifact.Image{URL: "https://example.invalid/cat.jpg", Detail: "low"},
				artifact.Image{Data: png},
				artifact.Image{Data: []byte("GIF89a"), MIMEType: "image/gif"},
			}},
			{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
				artifact.Reasoning{Content: "Look first."},
				artifact.Text{Content: "Let me look."},
				artifact.ToolCall{ID: "call_a", Name: "zoom", Arguments: `{"x":1}`},
				artifact.ToolCall{ID: "call_b", Name: "now", Arguments: ""},
				artifact.Usage{InputTokens: 5, OutputTokens: 6},
				artifact.Finish{Reason: "tool_calls"},
			}},
			{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: "call_a", Name: "zoom", Content: "a cat", Full: "a cat, in full"},
				// Approval records are the application's, never the model's.
				artifact.Pending{ToolCallID: "call_b", Name: "now", Reason: "asks the clock"},
			}},
			{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.Decision{ToolCallID: "call_b", Approved: true}}},
			{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: "call_b", Name: "now", Content: ""},
			}},
			{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Finish{Reason: "stop"}}},
			{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "And"}, artifact.Text{Content: "then?"}}},
		},
		Tools: []tool.Tool{
			{Name: "zoom", Description: "Zoom in.", Schema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}`)},
			{Name: "search", Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","minLength":1}}}`)},
			{Name: "now", Description: "The time."},
		},
		ToolChoice:        provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: "zoom"},
		ParallelToolCalls: &no,
		MaxTokens:         256,
		Temperature:       new(0.0),
		TopP:              new(0.5),
		Stop:              []string{"END"},
	}
	for _, o := range []provider.InvokeOption{WithSeed(7), WithUser("u-1"), WithReasoningEffort("low")} {
		if err := o.ApplyInvoke(t.Context(), nil, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := drain(t.Context(), p, req); err != nil {
		t.Fatal(err)
	}
	got := f.requests()[0]
	want := toJSON(t, `{
		"model": "gpt-test",
		"stream": true,
		"stream_options": {"include_usage": true},
		"temperature": 0,
		"top_p": 0.5,
		"max_tokens": 256,
		"stop": ["END"],
		"seed": 7,
		"user": "u-1",
		"reasoning_effort": "low",
		"parallel_tool_calls": false,
		"tool_choice": {"type": "function", "function": {"name": "zoom"}},
		"tools": [
			{"type": "function", "function": {"name": "zoom", "description": "Zoom in.", "strict": true,
				"parameters": {"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}}},
			{"type": "function", "function": {"name": "search",
				"parameters": {"type":"object","properties":{"q":{"type":"string","minLength":1}}}}},
			{"type": "function", "function": {"name": "now", "description": "The time.",
				"parameters": {"type":"object","properties":{}}}}
		],
		"messages": [
			{"role": "system", "content": "Be brief."},
			{"role": "user", "content": [
				{"type": "text", "text": "What is in these?"},
				{"type": "image_url", "image_url": {"url": "https://example.invalid/cat.jpg", "detail": "low"}},
				{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="}},
				{"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lGODlh"}}
			]},
			{"role": "assistant", "content": "Let me look.", "reasoning_content": "Look first.", "tool_calls": [
				{"id": "call_a", "type": "function", "function": {"name": "zoom", "arguments": "{\"x\":1}"}},
				{"id": "call_b", "type": "function", "function": {"name": "now", "arguments": "{}"}}
			]},
			{"role": "tool", "tool_call_id": "call_a", "content": "a cat"},
			{"role": "tool", "tool_call_id": "call_b", "content": "(no output)"},
			{"role": "user", "content": [{"type": "text", "text": "And"}, {"type": "text", "text": "then?"}]}
		]
	}`)
	if !reflect.DeepEqual(any(got.Body), want) {
		t.Errorf("body =\n%s\nwant\n%s", got.Raw, mustJSON(want))
	}
	for k, v := range map[string]string{
		"Authorization": "Bearer sk-test", "OpenAI-Organization": "org-1", "OpenAI-Project": "proj-1",
		"Accept": "text/event-stream", "Content-Type": "application/json",
	} {
		if g := got.Header.Get(k); g != v {
			t.Errorf("header %s = %q, want %q", k, g, v)
		}
	}
}

func TestSamplingValues(t *testing.T) {
	cases := []struct {
		name string
		req  provider.Request
		opts []Option
		want map[string]any // members that must be present (nil value: must be absent)
	}{
		{"nothing set", provider.Request{}, nil, map[string]any{"temperature": nil, "top_p": nil, "max_completion_tokens": nil, "max_tokens": nil}},
		{"temperature 0 is sent", provider.Request{Temperature: new(0.0)}, nil, map[string]any{"temperature": 0.0, "top_p": nil}},
		{"temperature 0.7", provider.Request{Temperature: new(0.7)}, nil, map[string]any{"temperature": 0.7}},
		{"top_p 0 and temperature 0", provider.Request{Temperature: new(0.0), TopP: new(0.0)}, nil, map[string]any{"temperature": 0.0, "top_p": 0.0}},
		{"temperature 2", provider.Request{Temperature: new(2.0)}, nil, map[string]any{"temperature": 2.0}},
		{"legacy max_tokens", provider.Request{MaxTokens: 64}, []Option{WithLegacyMaxTokens(true)}, map[string]any{"max_tokens": 64.0, "max_completion_tokens": nil}},
		{"parallel calls without tools are not sent", provider.Request{ParallelToolCalls: new(true)}, nil, map[string]any{"parallel_tool_calls": nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
			req := tc.req
			req.Turns = userReq("hi").Turns
			if err := drain(t.Context(), f.provider(t, tc.opts...), &req); err != nil {
				t.Fatal(err)
			}
			body := f.requests()[0].Body
			for k, v := range tc.want {
				g, ok := body[k]
				if v == nil && ok {
					t.Errorf("%s = %v, want absent", k, g)
				}
				if v != nil && g != v {
					t.Errorf("%s = %v, want %v", k, g, v)
				}
			}
		})
	}
}

func TestSendReasoningOff(t *testing.T) {
	f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
	req := &provider.Request{Turns: []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "q"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Reasoning{Content: "r"}, artifact.Text{Content: "a"}}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "q2"}}},
	}}
	if err := drain(t.Context(), f.provider(t, WithSendReasoning(false)), req); err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(f.requests()[0].Body["messages"]); got != `[{"content":"q","role":"user"},{"content":"a","role":"assistant"},{"content":"q2","role":"user"}]` {
		t.Errorf("messages = %s", got)
	}
}

func TestStrictToolsOff(t *testing.T) {
	f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
	req := userReq("hi")
	req.Tools = []tool.Tool{{Name: "a", Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}}
	if err := drain(t.Context(), f.provider(t, WithStrictTools(false)), req); err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(f.requests()[0].Body["tools"]); got != `[{"function":{"name":"a","parameters":{"additionalProperties":false,"properties":{},"type":"object"}},"type":"function"}]` {
		t.Errorf("tools = %s", got)
	}
}

func TestToolChoice(t *testing.T) {
	tools := []tool.Tool{{Name: "a"}, {Name: "b"}}
	cases := []struct {
		name   string
		choice provider.ToolChoice
		tools  []tool.Tool
		want   string // JSON of tool_choice; "" means absent
	}{
		{"zero value", provider.ToolChoice{}, tools, ""},
		{"auto", provider.ToolChoice{Mode: provider.ToolChoiceAuto}, tools, `"auto"`},
		{"none", provider.ToolChoice{Mode: provider.ToolChoiceNone}, tools, `"none"`},
		{"required", provider.ToolChoice{Mode: provider.ToolChoiceRequired}, tools, `"required"`},
		{"one tool", provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: "b"}, tools, `{"function":{"name":"b"},"type":"function"}`},
		{"auto without tools", provider.ToolChoice{Mode: provider.ToolChoiceAuto}, nil, ""},
		{"none without tools", provider.ToolChoice{Mode: provider.ToolChoiceNone}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
			req := userReq("hi")
			req.Tools, req.ToolChoice = tc.tools, tc.choice
			if err := drain(t.Context(), f.provider(t), req); err != nil {
				t.Fatal(err)
			}
			v, ok := f.requests()[0].Body["tool_choice"]
			if got := mustJSON(v); (tc.want == "" && ok) || (tc.want != "" && got != tc.want) {
				t.Errorf("tool_choice = %s, want %q", got, tc.want)
			}
		})
	}
}

func TestRequestErrors(t *testing.T) {
	user := func(arts ...artifact.Artifact) []ledger.Turn {
		return []ledger.Turn{{Role: ledger.RoleUser, Artifacts: arts}}
	}
	hi := user(artifact.Text{Content: "hi"})
	cases := []struct {
		name string
		req  provider.Request
		want string
	}{
		{"an image in a system turn", provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Image{URL: "u"}}}}},
			"openai: request: turn 0 (system): a system turn cannot carry an image"},
		{"an image with nothing in it", provider.Request{Turns: user(artifact.Image{})},
			"openai: request: turn 0 (user): image has neither URL nor data"},
		{"image data that is not an image", provider.Request{Turns: user(artifact.Image{Data: []byte("hello, world")})},
			`openai: request: turn 0 (user): image data is "text/plain; charset=utf-8", not an image type`},
		{"image data with a MIME type that is not an image", provider.Request{Turns: user(artifact.Image{Data: png, MIMEType: "application/pdf"})},
			`openai: request: turn 0 (user): image data is "application/pdf", not an image type`},
		{"a tool call in a user turn", provider.Request{Turns: user(artifact.ToolCall{ID: "c", Name: "a"})},
			"openai: request: turn 0 (user): a user turn cannot carry tool_call"},
		{"an artifact of an unknown kind", provider.Request{Turns: user(artifact.Unknown{Type: "citation", Raw: json.RawMessage(`{"kind":"citation"}`)})},
			"openai: request: turn 0 (user): a user turn cannot carry citation"},
		{"a nil artifact", provider.Request{Turns: user(nil)},
			"openai: request: turn 0 (user): a user turn cannot carry a nil artifact"},
		{"a delta in the ledger", provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.TextDelta{Content: "x"}}}}},
			"openai: request: turn 0 (assistant): an assistant turn cannot carry text_delta"},
		{"an image in an assistant turn", provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Image{URL: "u"}}}}},
			"openai: request: turn 0 (assistant): an assistant turn cannot carry image"},
		{"a tool call without a name", provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: "c"}}}}},
			`openai: request: turn 0 (assistant): tool call "c" has no name`},
		{"a tool call without an ID", provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{Name: "a"}}}}},
			`openai: request: turn 0 (assistant): tool call to "a" has no ID`},
		{"text in a tool turn", provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.Text{Content: "x"}}}}},
			"openai: request: turn 0 (tool): a tool turn cannot carry text"},
		{"a tool result without a call ID", provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{Name: "a", Content: "x"}}}}},
			`openai: request: turn 0 (tool): tool result for "a" has no tool call ID`},
		{"an unknown role", provider.Request{Turns: []ledger.Turn{{Role: "narrator", Artifacts: []artifact.Artifact{artifact.Text{Content: "x"}}}}},
			"openai: request: turn 0 (narrator): unknown role"},
		{"a tool without a name", provider.Request{Turns: hi, Tools: []tool.Tool{{Name: "a"}, {}}},
			"openai: request: tool 1 has no name"},
		{"a tool offered twice", provider.Request{Turns: hi, Tools: []tool.Tool{{Name: "a"}, {Name: "a"}}},
			`openai: request: tool "a": offered twice`},
		{"a schema that is not JSON", provider.Request{Turns: hi, Tools: []tool.Tool{{Name: "a", Schema: json.RawMessage(`{"type":`)}}},
			`openai: request: tool "a": schema is not valid JSON`},
		{"a schema that is not an object", provider.Request{Turns: hi, Tools: []tool.Tool{{Name: "a", Schema: json.RawMessage(`[1]`)}}},
			`openai: request: tool "a": schema is not a JSON object`},
		{"tool choice required without tools", provider.Request{Turns: hi, ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceRequired}},
			`openai: request: tool choice "required" but no tools are offered`},
		{"tool choice naming a tool not offered", provider.Request{Turns: hi, Tools: []tool.Tool{{Name: "a"}}, ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: "b"}},
			`openai: request: tool choice names "b", which is not among the 1 tools offered`},
		{"tool choice name without mode", provider.Request{Turns: hi, Tools: []tool.Tool{{Name: "a"}}, ToolChoice: provider.ToolChoice{Name: "a"}},
			`openai: request: tool choice names "a" but its Mode is not "tool"`},
		{"unknown tool choice mode", provider.Request{Turns: hi, ToolChoice: provider.ToolChoice{Mode: "any"}},
			`openai: request: unknown tool choice mode "any"`},
		{"negative MaxTokens", provider.Request{Turns: hi, MaxTokens: -1},
			"openai: request: MaxTokens is -1; it must not be negative"},
		{"NaN temperature", provider.Request{Turns: hi, Temperature: new(math.NaN())},
			"openai: request: temperature is NaN; it must be a finite number"},
		{"infinite top_p", provider.Request{Turns: hi, TopP: new(math.Inf(1))},
			"openai: request: top_p is +Inf; it must be a finite number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			err := drain(t.Context(), f.provider(t), &tc.req)
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

func TestNew(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvBaseURL, "")
	cases := []struct {
		name    string
		env     map[string]string
		opts    []Option
		wantErr string
		wantURL string
	}{
		{name: "no model", opts: []Option{WithAPIKey("k")}, wantErr: ErrNoModel.Error()},
		{name: "blank model", opts: []Option{WithAPIKey("k"), WithModel("  ")}, wantErr: ErrNoModel.Error()},
		{name: "no key for OpenAI", opts: []Option{WithModel("m")}, wantErr: ErrNoAPIKey.Error()},
		{name: "key from the environment", env: map[string]string{EnvAPIKey: "sk-env"}, opts: []Option{WithModel("m")}, wantURL: DefaultBaseURL},
		{name: "no key for a local server", opts: []Option{WithModel("m"), WithBaseURL("http://127.0.0.1:11434/v1/")}, wantURL: "http://127.0.0.1:11434/v1"},
		{name: "base URL from the environment", env: map[string]string{EnvBaseURL: "http://127.0.0.1:8000/v1"}, opts: []Option{WithModel("m")}, wantURL: "http://127.0.0.1:8000/v1"},
		{name: "option over environment", env: map[string]string{EnvBaseURL: "http://127.0.0.1:8000/v1"}, opts: []Option{WithModel("m"), WithBaseURL("http://127.0.0.1:9000/v1")}, wantURL: "http://127.0.0.1:9000/v1"},
		{name: "base URL without scheme", opts: []Option{WithModel("m"), WithBaseURL("127.0.0.1:8000/v1")}, wantErr: `openai: base URL "127.0.0.1:8000/v1" is not an http(s) URL`},
		{name: "base URL of another scheme", opts: []Option{WithModel("m"), WithBaseURL("ftp://127.0.0.1/v1")}, wantErr: `openai: base URL "ftp://127.0.0.1/v1" is not an http(s) URL`},
		{name: "nil option", opts: []Option{nil, WithModel("m"), WithAPIKey("k")}, wantURL: DefaultBaseURL},
		{name: "a lookup of one's own instead of the environment", env: map[string]string{EnvAPIKey: "sk-env", EnvBaseURL: "http://127.0.0.1:8000/v1"},
			opts: []Option{WithModel("m"), WithEnv(func(string) string { return "" })}, wantErr: ErrNoAPIKey.Error()},
		{name: "a lookup of one's own that names a server", env: map[string]string{EnvAPIKey: "sk-env"},
			opts: []Option{WithModel("m"), WithEnv(envMap{EnvBaseURL: "http://127.0.0.1:7000/v1"}.get)}, wantURL: "http://127.0.0.1:7000/v1"},
		{name: "a nil lookup is the environment", env: map[string]string{EnvAPIKey: "sk-env"}, opts: []Option{WithModel("m"), WithEnv(nil)}, wantURL: DefaultBaseURL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			p, err := New(tc.opts...)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.BaseURL() != tc.wantURL || p.Model() != "m" {
				t.Errorf("base URL %q model %q", p.BaseURL(), p.Model())
			}
		})
	}
}

func TestKeyHandling(t *testing.T) {
	t.Setenv(EnvAPIKey, "sk-env")
	cases := []struct {
		name string
		opts []Option
		want string
	}{
		{"key from the environment", nil, "Bearer sk-env"},
		{"option over environment", []Option{WithAPIKey("sk-opt")}, "Bearer sk-opt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
			opts := append([]Option{WithModel("m"), WithBaseURL(f.srv.URL + "/v1"), WithHTTPClient(f.srv.Client())}, tc.opts...)
			p, err := New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := drain(t.Context(), p, userReq("hi")); err != nil {
				t.Fatal(err)
			}
			if got := f.requests()[0].Header.Get("Authorization"); got != tc.want {
				t.Errorf("Authorization = %q", got)
			}
		})
	}
	t.Run("no key sends no Authorization", func(t *testing.T) {
		t.Setenv(EnvAPIKey, "")
		f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
		p, err := New(WithModel("m"), WithBaseURL(f.srv.URL+"/v1"), WithHTTPClient(f.srv.Client()))
		if err != nil {
			t.Fatal(err)
		}
		if err := drain(t.Context(), p, userReq("hi")); err != nil {
			t.Fatal(err)
		}
		if h := f.requests()[0].Header; h.Get("Authorization") != "" {
			t.Errorf("Authorization = %q", h.Get("Authorization"))
		}
	})
}

type envMap map[string]string

func (m envMap) get(k string) string { return m[k] }

func TestWithEnvKeepsTheEnvironmentsKeyHome(t *testing.T) {
	// A program that keeps its key under another name must not send the
	// OpenAI key in the environment to the server it was given.
	t.Setenv(EnvAPIKey, "sk-openai")
	f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
	p, err := New(WithModel("m"), WithBaseURL(f.srv.URL+"/v1"), WithHTTPClient(f.srv.Client()), WithEnv(envMap{}.get))
	if err != nil {
		t.Fatal(err)
	}
	if err := drain(t.Context(), p, userReq("hi")); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[0].Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q", got)
	}
}

func TestWithToolsSetsRequestTools(t *testing.T) {
	tools := []tool.Tool{{Name: "a"}}
	req := &provider.Request{Tools: []tool.Tool{{Name: "old"}}}
	if err := WithTools(tools).ApplyInvoke(t.Context(), nil, req); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req.Tools, tools) {
		t.Errorf("tools = %v", req.Tools)
	}
	// The provider-agnostic option given after it wins, and the other way round.
	if err := provider.Resolve(t.Context(), nil, req, WithTools(tools), provider.WithTools(nil)); err != nil || req.Tools != nil {
		t.Errorf("tools = %v, %v", req.Tools, err)
	}
}

func TestNilRequest(t *testing.T) {
	f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
	if err := drain(t.Context(), f.provider(t), nil); err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(f.requests()[0].Body["messages"]); got != "[]" {
		t.Errorf("messages = %s", got)
	}
}
