package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
)

// A thinking + tool use + tool result + thinking conversation: the second
// request carries the thinking block with its signature and the redacted
// block with its data, unchanged and ahead of the tool use they led to.
func TestThinkingToolRoundTrip(t *testing.T) {
	const sig = "EqQBCkYIARgCIkB+/sig==\u002b0"
	f := newFake(t,
		sse(msgStart(`{"input_tokens":50,"output_tokens":1}`),
			blockStart(0, `{"type":"thinking","thinking":"","signature":""}`),
			blockDelta(0, `{"type":"thinking_delta","thinking":"I should "}`),
			blockDelta(0, `{"type":"thinking_delta","thinking":"add."}`),
			blockDelta(0, `{"type":"signature_delta","signature":"`+sig+`"}`), blockStop(0),
			blockStart(1, `{"type":"redacted_thinking","data":"RED/ACTED+=="}`), blockStop(1),
			blockStart(2, `{"type":"tool_use","id":"toolu_1","name":"add","input":{}}`),
			blockDelta(2, `{"type":"input_json_delta","partial_json":"{\"a\":1,\"b\":2}"}`), blockStop(2),
			msgDelta("tool_use", `{"output_tokens":80}`), msgStop),
		sse(msgStart(`{"input_tokens":90,"output_tokens":1}`),
			blockStart(0, `{"type":"thinking","thinking":"","signature":""}`),
			blockDelta(0, `{"type":"thinking_delta","thinking":"It is 3."}`),
			blockDelta(0, `{"type":"signature_delta","signature":"second"}`), blockStop(0),
			blockStart(1, `{"type":"text","text":""}`), blockDelta(1, textDelta("3")), blockStop(1),
			msgDelta("end_turn", `{"output_tokens":9}`), msgStop),
	)
	p := f.provider(t, WithThinkingBudget(2048))
	tools := []tool.Tool{{Name: "add", Description: "adds", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"}},"required":["a"],"additionalProperties":false}`)}}
	th := ledger.NewThread()
	th.Append(ledger.RoleUser, artifact.Text{Content: "1+2?"})
	_, first, err := collect(p, &provider.Request{Turns: th.Turns(), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	wantFirst := []artifact.Artifact{
		artifact.Reasoning{Content: "I should add.", Signature: sig},
		artifact.Reasoning{Field: "redacted_thinking", Data: "RED/ACTED+=="},
		artifact.ToolCall{ID: "toolu_1", Name: "add", Arguments: `{"a":1,"b":2}`},
	}
	if !reflect.DeepEqual(first[:3], wantFirst) {
		t.Fatalf("first answer = %#v", first)
	}
	// Through the ledger's own encoding, as a stored thread would be.
	stored := make([]artifact.Artifact, 0, len(first))
	for _, a := range first {
		b, _ := artifact.Marshal(a)
		back, err := artifact.Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, back)
	}
	th.Append(ledger.RoleAssistant, stored...)
	th.Append(ledger.RoleTool, artifact.ToolResult{ToolCallID: "toolu_1", Name: "add", Content: "3"})
	_, second, err := collect(p, &provider.Request{Turns: th.Turns(), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if second[0] != (artifact.Reasoning{Content: "It is 3.", Signature: "second"}) || second[1] != (artifact.Text{Content: "3"}) {
		t.Fatalf("second answer = %#v", second)
	}

	body := f.body(1)
	if got := js(at(body, "thinking")); got != `{"budget_tokens":2048,"type":"enabled"}` {
		t.Errorf("thinking = %s", got)
	}
	if got := at(body, "max_tokens"); got != float64(DefaultMaxTokens+2048) {
		t.Errorf("max_tokens = %v", got)
	}
	asst := at(body, "messages", 1)
	if at(asst, "role") != "assistant" {
		t.Fatalf("messages = %s", js(at(body, "messages")))
	}
	blocks := at(asst, "content").([]any)
	want := []string{
		`{"signature":"` + strings.ReplaceAll(sig, "+", `\u002b`) + `","thinking":"I should add.","type":"thinking"}`,
		`{"data":"RED/ACTED+==","type":"redacted_thinking"}`,
	}
	for i, w := range want {
		var wv, gv any
		json.Unmarshal([]byte(w), &wv)
		gv = blocks[i]
		if !reflect.DeepEqual(wv, gv) {
			t.Errorf("block %d = %s, want %s", i, js(gv), w)
		}
	}
	if got := at(blocks[2], "type"); got != "tool_use" || js(at(blocks[2], "input")) != `{"a":1,"b":2}` || at(blocks[2], "id") != "toolu_1" {
		t.Errorf("tool use = %s", js(blocks[2]))
	}
	res := at(body, "messages", 2)
	if at(res, "role") != "user" || at(res, "content", 0, "type") != "tool_result" || at(res, "content", 0, "tool_use_id") != "toolu_1" ||
		at(res, "content", 0, "content", 0, "text") != "3" {
		t.Errorf("tool result message = %s", js(res))
	}
	// The signature goes back byte for byte.
	if !strings.Contains(f.raw[1], `"signature":"EqQBCkYIARgCIkB+/sig==+0"`) && !strings.Contains(f.raw[1], `"signature":"EqQBCkYIARgCIkB+/sig==\u002b0"`) {
		t.Errorf("raw second request lacks the signature: %s", f.raw[1])
	}
	// Tools carry their schema and the cache breakpoint.
	if got := js(at(body, "tools", 0)); got != `{"cache_control":{"type":"ephemeral"},"description":"adds","input_schema":{"additionalProperties":false,"properties":{"a":{"type":"number"}},"required":["a"],"type":"object"},"name":"add"}` {
		t.Errorf("tool = %s", got)
	}
}

func req(turns ...ledger.Turn) *provider.Request { return &provider.Request{Turns: turns} }

func turn(role ledger.Role, arts ...artifact.Artifact) ledger.Turn {
	return ledger.Turn{Role: role, Artifacts: arts}
}

// What each part of a Request becomes on the wire.
func TestRequestMapping(t *testing.T) {
	zero, half, one := 0.0, 0.5, 1.0
	no := false
	png := []byte{0x89, 'P', 'N', 'G'}
	tools := []tool.Tool{{Name: "look"}, {Name: "read"}}
	cases := []struct {
		name string
		opts []Option
		req  *provider.Request
		// path -> JSON of what is there
		want map[string]string
	}{
		{"system turns go to the system field", []Option{WithCache(CacheOff)},
			req(turn(ledger.RoleSystem, artifact.Text{Content: "be brief"}), userTurn("hi"), turn(ledger.RoleSystem, artifact.Text{Content: "and kind"})),
			map[string]string{"system": `[{"text":"be brief","type":"text"},{"text":"and kind","type":"text"}]`,
				"messages": `[{"content":[{"text":"hi","type":"text"}],"role":"user"}]`}},
		{"sampling and stop", nil,
			&provider.Request{Turns: []ledger.Turn{userTurn("x")}, Temperature: &zero, TopP: &half, Stop: []string{"END"}, MaxTokens: 100},
			map[string]string{"temperature": `0`, "top_p": `0.5`, "stop_sequences": `["END"]`, "max_tokens": `100`}},
		{"tool choice required, no parallel", []Option{WithCache(CacheOff)},
			&provider.Request{Turns: []ledger.Turn{userTurn("x")}, Tools: tools, ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceRequired}, ParallelToolCalls: &no},
			map[string]string{"tool_choice": `{"disable_parallel_tool_use":true,"type":"any"}`}},
		{"tool choice by name", nil,
			&provider.Request{Turns: []ledger.Turn{userTurn("x")}, Tools: tools, ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: "read"}},
			map[string]string{"tool_choice": `{"name":"read","type":"tool"}`}},
		{"tool choice none", nil,
			&provider.Request{Turns: []ledger.Turn{userTurn("x")}, Tools: tools, ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceNone}},
			map[string]string{"tool_choice": `{"type":"none"}`}},
		{"consecutive tool results and the next user turn share one user message", []Option{WithCache(CacheOff)},
			req(userTurn("go"),
				turn(ledger.RoleAssistant, artifact.ToolCall{ID: "a", Name: "look", Arguments: `{}`}, artifact.ToolCall{ID: "b", Name: "read", Arguments: `not json`}),
				turn(ledger.RoleTool, artifact.ToolResult{ToolCallID: "a", Content: "seen", IsError: true}),
				turn(ledger.RoleTool, artifact.ToolResult{ToolCallID: "b", Parts: artifact.List{
					artifact.Image{MIMEType: "image/png", Data: png},
					artifact.Resource{URI: "file:///a.pdf", MIMEType: "application/pdf", Blob: []byte("%PDF")},
					artifact.Resource{URI: "file:///n.txt", MIMEType: "text/plain", Text: "notes"},
					artifact.Audio{MIMEType: "audio/wav", Data: []byte("RIFF")},
				}}),
				userTurn("and now?")),
			map[string]string{
				"messages.1.content.1.input": `{}`,
				"messages.2": `{"content":[` +
					`{"content":[{"text":"seen","type":"text"}],"is_error":true,"tool_use_id":"a","type":"tool_result"},` +
					`{"content":[{"source":{"data":"iVBORw==","media_type":"image/png","type":"base64"},"type":"image"},` +
					`{"source":{"data":"JVBERg==","media_type":"application/pdf","type":"base64"},"title":"file:///a.pdf","type":"document"},` +
					`{"source":{"data":"notes","media_type":"text/plain","type":"text"},"title":"file:///n.txt","type":"document"},` +
					`{"text":"[audio audio/wav, 4 bytes — not shown: the API takes no audio]","type":"text"}],"tool_use_id":"b","type":"tool_result"},` +
					`{"text":"and now?","type":"text"}],"role":"user"}`,
				"messages.3": `null`,
			}},
		{"reasoning from another server is not sent", []Option{WithCache(CacheOff)},
			req(userTurn("x"), turn(ledger.RoleAssistant, artifact.Reasoning{Content: "elsewhere"}, artifact.Reasoning{Content: "r", Field: "reasoning_content"},
				artifact.Reasoning{Content: "k", Field: "reasoning_details", ContentField: "reasoning_content", Data: `[]`}, artifact.Text{Content: "y"}, artifact.Usage{InputTokens: 1}, artifact.Finish{Reason: "stop"})),
			map[string]string{"messages.1": `{"content":[{"text":"y","type":"text"}],"role":"assistant"}`}},
		{"user images by URL and data", []Option{WithCache(CacheOff)},
			req(turn(ledger.RoleUser, artifact.Image{URL: "https://example.invalid/a.png"}, artifact.Image{MIMEType: "image/png", Data: png})),
			map[string]string{"messages.0.content": `[{"source":{"type":"url","url":"https://example.invalid/a.png"},"type":"image"},{"source":{"data":"iVBORw==","media_type":"image/png","type":"base64"},"type":"image"}]`}},
		{"thinking allows temperature 1 and top_p 0.95", []Option{WithThinkingBudget(1024)},
			&provider.Request{Turns: []ledger.Turn{userTurn("x")}, Temperature: &one, TopP: func() *float64 { v := 0.95; return &v }(), MaxTokens: 2000},
			map[string]string{"temperature": `1`, "top_p": `0.95`, "thinking": `{"budget_tokens":1024,"type":"enabled"}`}},
		{"thinking off for one invocation", []Option{WithThinkingBudget(4096)},
			func() *provider.Request {
				r := req(userTurn("x"))
				WithThinking(0).ApplyInvoke(context.Background(), nil, r)
				return r
			}(),
			map[string]string{"thinking": `null`, "max_tokens": `8192`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, textAnswer("ok"))
			if _, _, err := collect(f.provider(t, c.opts...), c.req); err != nil {
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

func parseIndex(s string) (int, error) {
	var n int
	err := json.Unmarshal([]byte(s), &n)
	return n, err
}

// Every request that cannot be sent is refused before anything is sent,
// with a *RequestError saying why.
func TestRequestRefused(t *testing.T) {
	two, nan := 2.0, func() *float64 { v := 0.0; v = v / v; return &v }()
	low := 0.5
	cases := []struct {
		name string
		opts []Option
		req  *provider.Request
		want string
	}{
		{"temperature with thinking", []Option{WithThinkingBudget(1024)}, &provider.Request{Temperature: &low}, "temperature 0.5 cannot be used with thinking"},
		{"top_p with thinking", []Option{WithThinkingBudget(1024)}, &provider.Request{TopP: &low}, "top_p 0.5 cannot be used with thinking"},
		{"max tokens under the budget", []Option{WithThinkingBudget(2048)}, &provider.Request{MaxTokens: 2048}, "MaxTokens 2048 must exceed the thinking budget 2048"},
		{"forced tool with thinking", []Option{WithThinkingBudget(2048)}, &provider.Request{Tools: []tool.Tool{{Name: "a"}}, ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceRequired}}, `tool choice "required" cannot be used with thinking`},
		{"small budget per invocation", nil, func() *provider.Request {
			r := &provider.Request{}
			WithThinking(100).ApplyInvoke(context.Background(), nil, r)
			return r
		}(), "thinking budget 100 is below the API's minimum of 1024"},
		{"temperature out of range", nil, &provider.Request{Temperature: &two}, "temperature is 2; it must be between 0 and 1"},
		{"top_p NaN", nil, &provider.Request{TopP: nan}, "top_p is NaN"},
		{"negative max tokens", nil, &provider.Request{MaxTokens: -1}, "MaxTokens is -1"},
		{"unknown tool named", nil, &provider.Request{Tools: []tool.Tool{{Name: "a"}}, ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceTool, Name: "b"}}, `tool choice names "b"`},
		{"required without tools", nil, &provider.Request{ToolChoice: provider.ToolChoice{Mode: provider.ToolChoiceRequired}}, "with no tools offered"},
		{"unknown mode", nil, &provider.Request{ToolChoice: provider.ToolChoice{Mode: "sometimes"}}, `unknown tool choice mode "sometimes"`},
		{"schema not an object", nil, &provider.Request{Tools: []tool.Tool{{Name: "a", Schema: json.RawMessage(`{"type":"array"}`)}}}, `tool "a": the schema's type is array`},
		{"schema not JSON", nil, &provider.Request{Tools: []tool.Tool{{Name: "a", Schema: json.RawMessage(`{`)}}}, `tool "a": the schema is not a JSON object`},
		{"audio from the user", nil, req(turn(ledger.RoleUser, artifact.Audio{Data: []byte("x")})), "turn 0 (user): a user turn cannot carry a audio artifact"},
		{"image in a system turn", nil, req(turn(ledger.RoleSystem, artifact.Image{URL: "u"})), "turn 0 (system): a system turn carries only text"},
		{"text in a tool turn", nil, req(turn(ledger.RoleTool, artifact.Text{Content: "x"})), "turn 0 (tool): a tool turn carries tool results"},
		{"tool results after user text", nil, req(userTurn("x"), turn(ledger.RoleTool, artifact.ToolResult{ToolCallID: "a"})), "turn 1 (tool): tool results follow a user turn"},
		{"binary resource", nil, req(turn(ledger.RoleUser, artifact.Resource{URI: "f", MIMEType: "application/zip", Blob: []byte{1}})), "resource f (application/zip, 1 bytes)"},
		{"unknown role", nil, req(turn("robot", artifact.Text{Content: "x"})), "turn 0 (robot): unknown role"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			_, _, err := collect(f.provider(t, c.opts...), c.req)
			var re *RequestError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want a *RequestError containing %q", err, c.want)
			}
			if len(f.bodies) != 0 {
				t.Fatalf("%d requests were sent", len(f.bodies))
			}
		})
	}
}

// Cache breakpoints: tools, system, the newest message and the user
// message before it by default; never more than four.
func TestCacheBreakpoints(t *testing.T) {
	history := []ledger.Turn{
		turn(ledger.RoleSystem, artifact.Text{Content: "sys"}),
		userTurn("one"),
		turn(ledger.RoleAssistant, artifact.Reasoning{Content: "t", Signature: "s"}, artifact.ToolCall{ID: "c", Name: "look", Arguments: "{}"}),
		turn(ledger.RoleTool, artifact.ToolResult{ToolCallID: "c", Content: "r"}),
		turn(ledger.RoleAssistant, artifact.Text{Content: "two"}),
		userTurn("three"),
	}
	tools := []tool.Tool{{Name: "look"}, {Name: "read"}}
	cases := []struct {
		name string
		opts []Option
		want []string // paths that carry cache_control
	}{
		{"auto", nil, []string{"tools.1", "system.0", "messages.2.content.0", "messages.4.content.0"}},
		{"auto, one hour", []Option{WithCacheTTL(time.Hour)}, []string{"tools.1", "system.0", "messages.2.content.0", "messages.4.content.0"}},
		{"stable", []Option{WithCache(CacheStable)}, []string{"tools.1", "system.0"}},
		{"off", []Option{WithCache(CacheOff)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, textAnswer("ok"))
			if _, _, err := collect(f.provider(t, c.opts...), &provider.Request{Turns: history, Tools: tools}); err != nil {
				t.Fatal(err)
			}
			var got []string
			findCache(f.body(0), "", &got)
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Fatalf("breakpoints at %v, want %v", got, c.want)
			}
			if strings.Contains(c.name, "hour") && !strings.Contains(f.raw[0], `"ttl":"1h"`) {
				t.Errorf("no one-hour TTL in %s", f.raw[0])
			}
		})
	}
}

func findCache(v any, path string, out *[]string) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["cache_control"]; ok {
			*out = append(*out, path)
		}
		for _, k := range []string{"tools", "system", "messages", "content"} {
			if c, ok := x[k]; ok {
				findCache(c, join(k), out)
			}
		}
	case []any:
		for i, e := range x {
			findCache(e, join(js(i)), out)
		}
	}
}
