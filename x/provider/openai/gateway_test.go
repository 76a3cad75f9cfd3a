package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// Gateways (OpenRouter, LiteLLM, a company proxy) forward any model under
// any host: what the adapter sends is decided by the model and by what the
// server sends, not by host names.

func TestReasoningModel(t *testing.T) {
	cases := map[string]bool{
		"o1": true, "o1-mini": true, "o1-preview-2024-09-12": true,
		"o3": true, "o3-mini": true, "o3-pro": true, "o4-mini": true, "o4-mini-deep-research": true,
		"gpt-5": true, "gpt-5-mini": true, "gpt-5-2025-08-07": true, "gpt-5.1": true, "gpt-5.1-codex-max": true,
		"gpt-6-astra": true, "GPT-5": true, " gpt-5 ": true,
		"openai/gpt-5": true, "openai/o4-mini-high": true, "azure/o3-mini": true,
		"openrouter/openai/gpt-5-nano": true, "openai/gpt-5:free": true, "gpt-5@2025-08-07": true,
		"gpt-4o": false, "gpt-4.1-mini": false, "gpt-50": false, "o10": false, "o3x": false,
		"gpt-5x": false, "oss-o3": false, "google/gemini-2.5-flash": false, "kimi-k2.5": false,
		"": false, "/": false, "openai/": false, "o": false,
	}
	for model, want := range cases {
		if got := reasoningModel(model); got != want {
			t.Errorf("reasoningModel(%q) = %v, want %v", model, got, want)
		}
	}
}

// TestMaxTokensFieldByModel: the field follows the model on any server,
// the host on OpenAI's own, and WithMaxTokensField over both.
func TestMaxTokensFieldByModel(t *testing.T) {
	const gateway = "https://llm.gateway.example/v1"
	cases := []struct {
		name, base, model string
		opts              []Option
		want              string
	}{
		{"gpt-5 on a gateway", gateway, "gpt-5", nil, "max_completion_tokens"},
		{"vendor-prefixed on OpenRouter", "https://openrouter.ai/api/v1", "openai/gpt-5-mini", nil, "max_completion_tokens"},
		{"o3 on a local proxy", "http://127.0.0.1:4000", "o3-mini", nil, "max_completion_tokens"},
		{"another model on a gateway", gateway, "openai/gpt-4o", nil, "max_tokens"},
		{"a local model", "http://127.0.0.1:11434/v1", "qwen3:8b", nil, "max_tokens"},
		{"any model on OpenAI", "https://api.openai.com/v1", "gpt-4o", nil, "max_completion_tokens"},
		{"told max_tokens for gpt-5", gateway, "gpt-5", []Option{WithMaxTokensField(MaxTokens)}, "max_tokens"},
		{"told max_tokens on OpenAI", "https://api.openai.com/v1", "o3", []Option{WithLegacyMaxTokens(true)}, "max_tokens"},
		{"told max_completion_tokens", gateway, "llama-3.3-70b", []Option{WithMaxTokensField(MaxCompletionTokens)}, "max_completion_tokens"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
			opts := append([]Option{WithBaseURL(tc.base), WithModel(tc.model), WithHTTPClient(f.redirect())}, tc.opts...)
			req := userReq("hi")
			req.MaxTokens = 64
			if err := drain(t.Context(), f.provider(t, opts...), req); err != nil {
				t.Fatal(err)
			}
			body := f.requests()[0].Body
			other := map[string]string{"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[tc.want]
			if body[tc.want] != 64.0 || body[other] != nil || body["model"] != tc.model {
				t.Errorf("body = %s, want %s 64 and no %s", f.requests()[0].Raw, tc.want, other)
			}
		})
	}
}

// TestGoOpenAINeverRefuses: go-openai refuses some model names before
// sending (max_tokens, temperature or top_p for reasoning models, tools
// for some gpt-6 names, old completion models on the chat endpoint). Each
// request here is one it would refuse; the adapter sends it and the
// server's answer counts.
func TestGoOpenAINeverRefuses(t *testing.T) {
	temp, topP := 0.7, 0.9
	cases := []struct {
		name  string
		model string
		opts  []Option
		req   func(*provider.Request)
		want  map[string]any
	}{
		{"max_tokens for o3-mini, as told", "o3-mini", []Option{WithLegacyMaxTokens(true)},
			func(r *provider.Request) { r.MaxTokens = 10 }, map[string]any{"max_tokens": 10.0}},
		{"temperature and top_p for gpt-5", "gpt-5", nil,
			func(r *provider.Request) { r.Temperature, r.TopP = &temp, &topP },
			map[string]any{"temperature": 0.7, "top_p": 0.9}},
		{"tools for gpt-6-astra", "gpt-6-astra", nil,
			func(r *provider.Request) { r.Tools = []tool.Tool{{Name: "look"}} }, map[string]any{"tools": []any{
				map[string]any{"type": "function", "function": map[string]any{"name": "look",
					"parameters": map[string]any{"type": "object", "properties": map[string]any{}}}},
			}}},
		{"an old completion model's name", "text-davinci-003", nil, func(*provider.Request) {}, map[string]any{}},
		{"a name that needs escaping", `my<model>&"co"`, nil, func(*provider.Request) {}, map[string]any{}},
	}
	for _, tc := range cases {
		for _, stream := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: ", streamed", false: ", whole"}[stream], func(t *testing.T) {
				f := newFake(t, okReply)
				req := userReq("hi")
				tc.req(req)
				opts := append([]Option{WithModel(tc.model), WithStreaming(stream)}, tc.opts...)
				deltas, arts, err := providertest.CollectContext(t.Context(), f.provider(t, opts...), req)
				if err != nil {
					t.Fatal(err)
				}
				if want := []artifact.Artifact{artifact.Text{Content: "ok"}, artifact.Finish{Reason: "stop"}}; !reflect.DeepEqual(arts, want) {
					t.Errorf("artifacts = %#v (deltas %#v)", arts, deltas)
				}
				reqs := f.requests()
				if len(reqs) != 1 {
					t.Fatalf("%d requests", len(reqs))
				}
				name, _ := json.Marshal(tc.model)
				if !bytes.HasPrefix(reqs[0].Raw, append([]byte(`{"model":`), name...)) {
					t.Errorf("body = %s, want it to begin with the model", reqs[0].Raw)
				}
				if reqs[0].Body["model"] != tc.model {
					t.Errorf("model = %v", reqs[0].Body["model"])
				}
				for k, v := range tc.want {
					if !reflect.DeepEqual(reqs[0].Body[k], v) {
						t.Errorf("%s = %s, want %s", k, mustJSON(reqs[0].Body[k]), mustJSON(v))
					}
				}
			})
		}
	}
}

// TestWithModelLayouts: the model, and the members go-openai cannot
// write, go into the body however it begins.
func TestWithModelLayouts(t *testing.T) {
	p, err := New(WithModel("gpt-5"), WithBaseURL("http://127.0.0.1:1/v1"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ in, patch, want string }{
		{`{"model":"","messages":[]}`, ``, `{"model":"gpt-5","messages":[]}`},
		{`{"model":"","messages":[]}`, `"temperature":0,`, `{"temperature":0,"model":"gpt-5","messages":[]}`},
		{`{"messages":[],"model":""}`, ``, `{"messages":[],"model":"gpt-5"}`},
		{`{"messages":[],"model":""}`, `"top_p":0,`, `{"top_p":0,"messages":[],"model":"gpt-5"}`},
		{`{"messages":[]}`, ``, `{"model":"gpt-5","messages":[]}`},
	}
	for _, tc := range cases {
		got, err := p.withModel([]byte(tc.in), []byte(tc.patch))
		if err != nil || string(got) != tc.want {
			t.Errorf("withModel(%s, %s) = %s, %v; want %s", tc.in, tc.patch, got, err, tc.want)
		}
	}
	if _, err := p.withModel([]byte(`[]`), nil); err == nil {
		t.Error("withModel([]) did not fail")
	}
}

// gatewayTools is the tool the gateway loops call.
var gatewayTools = []tool.Tool{{Name: "get_weather", Description: "Weather in a city.", Schema: weatherSchema}}

// weatherHandler answers every get_weather call.
var weatherHandler = loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
	c, ok := a.(artifact.ToolCall)
	if !ok {
		return nil
	}
	e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
		artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "sunny"},
	}})
	return nil
})

// TestGatewayGPT5ToolLoop: a gpt-5 tool loop through a gateway (not
// OpenAI's host), in the chunks OpenAI's API streams for gpt-5, is sent
// with max_completion_tokens and answered.
func TestGatewayGPT5ToolLoop(t *testing.T) {
	const fp = `"system_fingerprint":null,`
	gpt5 := func(delta, finish string) string {
		return `{"id":"chatcmpl-C1","object":"chat.completion.chunk","created":1754600000,"model":"gpt-5-2025-08-07","service_tier":"default",` + fp +
			`"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}],"usage":null,"obfuscation":"x1"}`
	}
	usage := func(p, c, r int) string {
		return `{"id":"chatcmpl-C1","object":"chat.completion.chunk","created":1754600000,"model":"gpt-5-2025-08-07","service_tier":"default",` + fp +
			`"choices":[],"usage":{"prompt_tokens":` + itoa(p) + `,"completion_tokens":` + itoa(c) + `,"total_tokens":` + itoa(p+c) +
			`,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":` + itoa(r) +
			`,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"obfuscation":"y"}`
	}
	f := newFake(t,
		sse(
			gpt5(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_g5","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null}`, "null"),
			gpt5(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, "null"),
			gpt5(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "null"),
			gpt5(`{}`, `"tool_calls"`),
			usage(60, 150, 128),
		),
		sse(
			gpt5(`{"role":"assistant","content":"","refusal":null}`, "null"),
			gpt5(`{"content":"Sunny in Paris."}`, "null"),
			gpt5(`{}`, `"stop"`),
			usage(90, 40, 32),
		),
	)
	p := f.provider(t, WithModel("gpt-5"), WithBaseURL("https://llm.gateway.example/v1"), WithHTTPClient(f.redirect()))
	th := ledger.NewThread(ledger.WithClock(nil))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Weather in Paris?"})
	step := loop.New(loop.WithHandlers(weatherHandler), loop.WithInvokeOptions(
		WithTools(gatewayTools),
		provider.OptionFunc(func(_ context.Context, _ ledger.State, r *provider.Request) error { r.MaxTokens = 4000; return nil }),
	))
	if _, err := step.Run(t.Context(), th, p); err != nil {
		t.Fatal(err)
	}
	want := []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Weather in Paris?"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
			artifact.ToolCall{ID: "call_g5", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			artifact.Usage{InputTokens: 60, OutputTokens: 150, ReasoningTokens: 128},
			artifact.Finish{Reason: "tool_calls"},
		}},
		{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "call_g5", Name: "get_weather", Content: "sunny"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
			artifact.Text{Content: "Sunny in Paris."},
			artifact.Usage{InputTokens: 90, OutputTokens: 40, ReasoningTokens: 32},
			artifact.Finish{Reason: "stop"},
		}},
	}
	if got := th.Turns(); !reflect.DeepEqual(got, want) {
		t.Errorf("ledger =\n%#v\nwant\n%#v", got, want)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		if r.Body["model"] != "gpt-5" || r.Body["max_completion_tokens"] != 4000.0 || r.Body["max_tokens"] != nil {
			t.Errorf("request %d = %s", i, r.Raw)
		}
		if !bytes.HasPrefix(r.Raw, []byte(`{"model":"gpt-5",`)) {
			t.Errorf("request %d begins %.40s", i, r.Raw)
		}
	}
	msgs := toJSON(t, `[{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","tool_calls":[{"id":"call_g5","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_g5","content":"sunny"}]`)
	if !reflect.DeepEqual(reqs[1].Body["messages"], msgs) {
		t.Errorf("second request messages = %s", mustJSON(reqs[1].Body["messages"]))
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestUsageReasoningBeside: whether completion_tokens holds the reasoning
// is read from the numbers: reasoning above completion_tokens is beside
// it, whatever total_tokens says; a total above prompt plus output holds
// unnamed output.
func TestUsageReasoningBeside(t *testing.T) {
	cases := []struct {
		name  string
		usage string
		want  artifact.Usage
	}{
		{"OpenAI: reasoning inside completion",
			`{"prompt_tokens":60,"completion_tokens":150,"total_tokens":210,"completion_tokens_details":{"reasoning_tokens":128}}`,
			artifact.Usage{InputTokens: 60, OutputTokens: 150, ReasoningTokens: 128}},
		{"Vercel, Gemini 2.5 Flash: reasoning beside, total leaves it out",
			`{"prompt_tokens":12,"completion_tokens":35,"total_tokens":47,"completion_tokens_details":{"reasoning_tokens":412}}`,
			artifact.Usage{InputTokens: 12, OutputTokens: 447, ReasoningTokens: 412}},
		{"Vercel, Gemini 3 Pro: reasoning beside, total holds it",
			`{"prompt_tokens":1200,"completion_tokens":80,"total_tokens":2301,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":1021}}`,
			artifact.Usage{InputTokens: 1200, OutputTokens: 1101, CachedInputTokens: 1024, ReasoningTokens: 1021}},
		{"reasoning beside, total above even that",
			`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":60,"completion_tokens_details":{"reasoning_tokens":40}}`,
			artifact.Usage{InputTokens: 10, OutputTokens: 50, ReasoningTokens: 40}},
		{"xAI: reasoning beside, total holds it, reasoning below completion",
			`{"prompt_tokens":10,"completion_tokens":30,"total_tokens":60,"completion_tokens_details":{"reasoning_tokens":20}}`,
			artifact.Usage{InputTokens: 10, OutputTokens: 50, ReasoningTokens: 20}},
		{"reasoning equal to completion: inside",
			`{"prompt_tokens":10,"completion_tokens":64,"total_tokens":74,"completion_tokens_details":{"reasoning_tokens":64}}`,
			artifact.Usage{InputTokens: 10, OutputTokens: 64, ReasoningTokens: 64}},
		{"Gemini's own API: unnamed reasoning in total",
			`{"prompt_tokens":7,"completion_tokens":2,"total_tokens":29}`,
			artifact.Usage{InputTokens: 7, OutputTokens: 22, ReasoningTokens: 20}},
		{"no total",
			`{"prompt_tokens":7,"completion_tokens":2,"completion_tokens_details":{"reasoning_tokens":9}}`,
			artifact.Usage{InputTokens: 7, OutputTokens: 11, ReasoningTokens: 9}},
		{"total below prompt plus completion",
			`{"prompt_tokens":7,"completion_tokens":20,"total_tokens":10,"completion_tokens_details":{"reasoning_tokens":3}}`,
			artifact.Usage{InputTokens: 7, OutputTokens: 20, ReasoningTokens: 3}},
		{"reasoning at the largest count",
			`{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9,"completion_tokens_details":{"reasoning_tokens":9223372036854775807}}`,
			artifact.Usage{InputTokens: 7, OutputTokens: math.MaxInt64, ReasoningTokens: math.MaxInt64}},
		{"total at the largest count",
			`{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9223372036854775807}`,
			artifact.Usage{InputTokens: 7, OutputTokens: math.MaxInt64 - 7, ReasoningTokens: math.MaxInt64 - 9}},
		{"negative prompt",
			`{"prompt_tokens":-9223372036854775807,"completion_tokens":2,"total_tokens":9223372036854775807}`,
			artifact.Usage{InputTokens: -9223372036854775807, OutputTokens: 2}},
		{"negative reasoning",
			`{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9,"completion_tokens_details":{"reasoning_tokens":-5}}`,
			artifact.Usage{InputTokens: 7, OutputTokens: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var u wireUsage
			if err := json.Unmarshal([]byte(tc.usage), &u); err != nil {
				t.Fatal(err)
			}
			if got := *usageOf(&u); got != tc.want {
				t.Errorf("usage = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGatewayGeminiUsage: Gemini through Vercel's gateway, streamed and
// whole, reports its output with the reasoning in it, and the loop's
// token count sees it.
func TestGatewayGeminiUsage(t *testing.T) {
	const usage = `{"prompt_tokens":12,"completion_tokens":35,"total_tokens":47,"completion_tokens_details":{"reasoning_tokens":412}}`
	want := artifact.Usage{InputTokens: 12, OutputTokens: 447, ReasoningTokens: 412}
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "streamed", false: "whole"}[stream], func(t *testing.T) {
			reply := sse(
				wholeChunk(`{"index":0,"delta":{"role":"assistant","content":"Hi."}}`, "null"),
				wholeChunk(`{"index":0,"delta":{},"finish_reason":"stop"}`, "null"),
				wholeChunk(``, usage),
			)
			if !stream {
				reply = jsonReply(200, `{"id":"gen-1","object":"chat.completion","created":1,"model":"google/gemini-2.5-flash","choices":[{"index":0,`+
					`"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}],"usage":`+usage+`}`)
			}
			f := newFake(t, reply)
			p := f.provider(t, WithModel("google/gemini-2.5-flash"), WithStreaming(stream))
			th := ledger.NewThread(ledger.WithClock(nil))
			_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
			if _, err := loop.New().Run(t.Context(), th, p); err != nil {
				t.Fatal(err)
			}
			turns := th.Turns()
			got := turns[len(turns)-1].Artifacts
			if !reflect.DeepEqual(got, []artifact.Artifact{artifact.Text{Content: "Hi."}, want, artifact.Finish{Reason: "stop"}}) {
				t.Errorf("answer = %#v", got)
			}
			if u, _ := got[1].(artifact.Usage); u.Total() != 459 {
				t.Errorf("usage total = %d, want 459", u.Total())
			}
		})
	}
}

// kimiChunk is a chunk as Avian streams Kimi K2.5 in thinking mode: the
// reasoning both as reasoning_content and as reasoning_details.
func kimiChunk(delta, finish string) string {
	return `{"id":"chatcmpl-k1","object":"chat.completion.chunk","created":1764000000,"model":"moonshotai/kimi-k2.5","choices":[{"index":0,"delta":` +
		delta + `,"finish_reason":` + finish + `}]}`
}

// TestKimiThinkingToolLoop: Kimi refuses a tool-calling assistant message
// without its reasoning_content; the loop's second request carries it, and
// the reasoning_details, as they came.
func TestKimiThinkingToolLoop(t *testing.T) {
	text := func(s string) string { b, _ := marshalString(s); return string(b) }
	first, second := `The user wants "Paris" <weather> & so `, `I call get_weather — once.`
	d1 := `{"type":"reasoning.text","text":` + text(first) + `,"format":"unknown","index":0}`
	d2 := `{"type":"reasoning.text","text":` + text(second) + `,"format":"unknown","index":0}`
	merged := `[{"type":"reasoning.text","text":` + text(first+second) + `,"format":"unknown","index":0}]`
	f := newFake(t,
		sse(
			kimiChunk(`{"role":"assistant","content":""}`, "null"),
			kimiChunk(`{"reasoning_content":`+text(first)+`,"reasoning_details":[`+d1+`]}`, "null"),
			kimiChunk(`{"reasoning_content":`+text(second)+`,"reasoning_details":[`+d2+`]}`, "null"),
			kimiChunk(`{"tool_calls":[{"index":0,"id":"functions.get_weather:0","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]}`, "null"),
			kimiChunk(`{}`, `"tool_calls"`),
		),
		sse(kimiChunk(`{"content":"Sunny."}`, "null"), kimiChunk(`{}`, `"stop"`)),
	)
	p := f.provider(t, WithModel("moonshotai/kimi-k2.5"))
	th := ledger.NewThread(ledger.WithClock(nil))
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "Weather in Paris?"})
	step := loop.New(loop.WithHandlers(weatherHandler), loop.WithInvokeOptions(WithTools(gatewayTools)))
	if _, err := step.Run(t.Context(), th, p); err != nil {
		t.Fatal(err)
	}
	wantReasoning := artifact.Reasoning{Content: first + second, Field: "reasoning_details", ContentField: "reasoning_content", Data: merged}
	if got := th.Turns()[1].Artifacts[0]; !reflect.DeepEqual(got, wantReasoning) {
		t.Errorf("reasoning = %#v\nwant %#v", got, wantReasoning)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	wantMsg := `{"role":"assistant","tool_calls":[{"id":"functions.get_weather:0","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}],` +
		`"reasoning_content":` + text(first+second) + `,"reasoning_details":` + merged + `}`
	if !bytes.Contains(reqs[1].Raw, []byte(wantMsg)) {
		t.Errorf("second request:\n%s\ndoes not hold, byte for byte,\n%s", reqs[1].Raw, wantMsg)
	}
	if n := strings.Count(string(reqs[1].Raw), `"reasoning_content"`); n != 1 {
		t.Errorf("reasoning_content sent %d times", n)
	}
}

// TestReasoningBesideDetailsWhole: a whole answer with both fields sends both back;
// one with details beside "reasoning" (OpenRouter) sends the details only.
func TestReasoningBesideDetailsWhole(t *testing.T) {
	details := `[{"type":"reasoning.text","text":"Plan.","index":0}]`
	call := `"tool_calls":[{"id":"call_1","type":"function","function":{"name":"look","arguments":"{}"}}]`
	cases := []struct {
		name, message string
		want          artifact.Reasoning
		sent          string
	}{
		{"reasoning_content and details", `"reasoning_content":"Plan.","reasoning_details":` + details,
			artifact.Reasoning{Content: "Plan.", Field: "reasoning_details", ContentField: "reasoning_content", Data: details},
			`{"role":"assistant",` + call + `,"reasoning_content":"Plan.","reasoning_details":` + details + `}`},
		{"reasoning and details", `"reasoning":"Plan.","reasoning_details":` + details,
			artifact.Reasoning{Content: "Plan.", Field: "reasoning_details", Data: details},
			`{"role":"assistant",` + call + `,"reasoning_details":` + details + `}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, jsonReply(200, `{"id":"x","object":"chat.completion","created":1,"model":"kimi-k2.5","choices":[{"index":0,`+
				`"message":{"role":"assistant","content":null,`+tc.message+`,`+call+`},"finish_reason":"tool_calls"}]}`), okReply)
			p := f.provider(t, WithStreaming(false))
			_, arts, err := providertest.CollectContext(t.Context(), p, userReq("q"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(arts[0], tc.want) {
				t.Errorf("reasoning = %#v, want %#v", arts[0], tc.want)
			}
			next := userReq("q")
			next.Turns = append(next.Turns,
				ledger.Turn{Role: ledger.RoleAssistant, Artifacts: arts},
				ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "call_1", Name: "look", Content: "seen"}}})
			if err := drain(t.Context(), p, next); err != nil {
				t.Fatal(err)
			}
			if raw := f.requests()[1].Raw; !bytes.Contains(raw, []byte(tc.sent)) {
				t.Errorf("follow-up body:\n%s\ndoes not hold\n%s", raw, tc.sent)
			}
		})
	}
}

// TestStoredCommaFieldGoesBackAsBefore: a thread stored before Reasoning had
// ContentField holds Kimi's reasoning under the field
// "reasoning_content,reasoning_details". It loads into the shape the stream
// now gives, and the follow-up request carries both fields, byte for byte
// as it did.
func TestStoredCommaFieldGoesBackAsBefore(t *testing.T) {
	details := `[{"type":"reasoning.text","text":"Plan <a> & b.","format":"unknown","index":0}]`
	detailsJSON, _ := json.Marshal(details)
	stored := `{"role":"assistant","artifacts":[` +
		`{"kind":"reasoning","content":"Plan \u003ca\u003e \u0026 b.","field":"reasoning_content,reasoning_details","data":` + string(detailsJSON) + `},` +
		`{"kind":"tool_call","id":"call_1","name":"look","arguments":"{}"},` +
		`{"kind":"finish","reason":"tool_calls"}]}`
	var turn ledger.Turn
	if err := json.Unmarshal([]byte(stored), &turn); err != nil {
		t.Fatal(err)
	}
	want := artifact.Reasoning{Content: "Plan <a> & b.", Field: fieldReasoningDetails, ContentField: fieldReasoningContent, Data: details}
	if got := turn.Artifacts[0]; !reflect.DeepEqual(got, want) {
		t.Fatalf("stored reasoning loads as %#v\nwant %#v", got, want)
	}

	f := newFake(t, okReply)
	p := f.provider(t, WithModel("moonshotai/kimi-k2.5"))
	req := userReq("q")
	req.Turns = append(req.Turns, turn,
		ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "call_1", Name: "look", Content: "seen"}}})
	if err := drain(t.Context(), p, req); err != nil {
		t.Fatal(err)
	}
	sent := `{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"look","arguments":"{}"}}],` +
		`"reasoning_content":"Plan <a> & b.","reasoning_details":` + details + `}`
	if raw := f.requests()[0].Raw; !bytes.Contains(raw, []byte(sent)) {
		t.Errorf("request:\n%s\ndoes not hold, byte for byte,\n%s", raw, sent)
	}
}
