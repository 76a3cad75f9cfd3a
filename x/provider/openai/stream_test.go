package openai

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

func userReq(s string) *provider.Request {
	return &provider.Request{Turns: []ledger.Turn{{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: s}}}}}
}

func TestStreamText(t *testing.T) {
	f := newFake(t, sse(roleChunk(), textChunk("Hel"), textChunk("lo, "), textChunk("world"), finishChunk("stop"), usageChunk(12, 5)))
	deltas, arts, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	wantDeltas := []artifact.Artifact{
		artifact.TextDelta{Content: "Hel"}, artifact.TextDelta{Content: "lo, "}, artifact.TextDelta{Content: "world"},
	}
	if !reflect.DeepEqual(deltas, wantDeltas) {
		t.Errorf("deltas = %#v", deltas)
	}
	want := []artifact.Artifact{
		artifact.Text{Content: "Hello, world"},
		artifact.Usage{InputTokens: 12, OutputTokens: 5, CachedInputTokens: 3, ReasoningTokens: 2},
		artifact.Finish{Reason: "stop"},
	}
	if !reflect.DeepEqual(arts, want) {
		t.Errorf("artifacts = %#v", arts)
	}
	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" {
		t.Fatalf("requests = %+v", reqs)
	}
	if got := mustJSON(reqs[0].Body["stream_options"]); got != `{"include_usage":true}` {
		t.Errorf("stream_options = %s", got)
	}
	if reqs[0].Body["stream"] != true {
		t.Errorf("stream = %v", reqs[0].Body["stream"])
	}
}

func TestStreamReasoning(t *testing.T) {
	// DeepSeek and llama.cpp spell it reasoning_content, newer vLLM and
	// OpenRouter reasoning; a server sending both is counted once.
	f := newFake(t, sse(
		roleChunk(),
		chunk(`{"reasoning_content":"Let me "}`, "null"),
		chunk(`{"reasoning":"think. "}`, "null"),
		chunk(`{"reasoning_content":"Done.","reasoning":"Done."}`, "null"),
		textChunk("42"),
		finishChunk("stop"),
	))
	deltas, arts, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("q"))
	if err != nil {
		t.Fatal(err)
	}
	wantDeltas := []artifact.Artifact{
		artifact.ReasoningDelta{Content: "Let me "}, artifact.ReasoningDelta{Content: "think. "},
		artifact.ReasoningDelta{Content: "Done."}, artifact.TextDelta{Content: "42"},
	}
	if !reflect.DeepEqual(deltas, wantDeltas) {
		t.Errorf("deltas = %#v", deltas)
	}
	want := []artifact.Artifact{
		artifact.Reasoning{Content: "Let me think. Done.", Field: "reasoning_content"}, artifact.Text{Content: "42"}, artifact.Finish{Reason: "stop"},
	}
	if !reflect.DeepEqual(arts, want) {
		t.Errorf("artifacts = %#v", arts)
	}
}

func TestStreamParallelToolCalls(t *testing.T) {
	// Fragments of two calls interleave; the second call's index is lower
	// in the stream's first appearance order than its number suggests to
	// check ordering is by index, not arrival.
	f := newFake(t, sse(
		chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}],"refusal":null}`, "null"),
		toolChunk(0, "call_a", "get_weather", ""),
		toolChunk(1, "", "", `{"tz":`),
		toolChunk(0, "", "", `{"city":"Pa`),
		toolChunk(1, "", "", `"CET"}`),
		toolChunk(0, "", "", `ris"`), // the model never closed the object
		finishChunk("tool_calls"),
		usageChunk(40, 30),
	))
	deltas, arts, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("weather and time?"))
	if err != nil {
		t.Fatal(err)
	}
	wantDeltas := []artifact.Artifact{
		artifact.ToolCallDelta{Index: 1, ID: "call_b", Name: "get_time"},
		artifact.ToolCallDelta{Index: 0, ID: "call_a", Name: "get_weather"},
		artifact.ToolCallDelta{Index: 1, Arguments: `{"tz":`},
		artifact.ToolCallDelta{Index: 0, Arguments: `{"city":"Pa`},
		artifact.ToolCallDelta{Index: 1, Arguments: `"CET"}`},
		artifact.ToolCallDelta{Index: 0, Arguments: `ris"`},
	}
	if !reflect.DeepEqual(deltas, wantDeltas) {
		t.Errorf("deltas = %#v", deltas)
	}
	want := []artifact.Artifact{
		artifact.ToolCall{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris"`},
		artifact.ToolCall{ID: "call_b", Name: "get_time", Arguments: `{"tz":"CET"}`},
		artifact.Usage{InputTokens: 40, OutputTokens: 30, CachedInputTokens: 3, ReasoningTokens: 2},
		artifact.Finish{Reason: "tool_calls"},
	}
	if !reflect.DeepEqual(arts, want) {
		t.Errorf("artifacts = %#v", arts)
	}
}

func TestStreamToolCallShapes(t *testing.T) {
	cases := []struct {
		name   string
		chunks []string
		want   []artifact.ToolCall
	}{{
		name: "whole calls without index, as some servers send them",
		chunks: []string{
			chunk(`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}}]}`, "null"),
			chunk(`{"tool_calls":[{"id":"c2","type":"function","function":{"name":"b","arguments":"{}"}}]}`, "null"),
			finishChunk("stop"),
		},
		want: []artifact.ToolCall{{ID: "c1", Name: "a", Arguments: `{"x":1}`}, {ID: "c2", Name: "b", Arguments: "{}"}},
	}, {
		name: "fragments without index continue the last call",
		chunks: []string{
			chunk(`{"tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{\"x\""}}]}`, "null"),
			chunk(`{"tool_calls":[{"function":{"arguments":":1}"}}]}`, "null"),
			finishChunk("tool_calls"),
		},
		want: []artifact.ToolCall{{ID: "c1", Name: "a", Arguments: `{"x":1}`}},
	}, {
		name: "one index reused for every call, each with a new ID",
		chunks: []string{
			toolChunk(0, "c1", "a", `{"x"`),
			toolChunk(0, "", "", `:1}`),
			toolChunk(0, "c2", "b", `{"y"`),
			toolChunk(0, "", "", `:2}`),
			toolChunk(1, "c3", "c", `{}`),
			finishChunk("tool_calls"),
		},
		want: []artifact.ToolCall{
			{ID: "c1", Name: "a", Arguments: `{"x":1}`}, {ID: "c2", Name: "b", Arguments: `{"y":2}`}, {ID: "c3", Name: "c", Arguments: `{}`},
		},
	}, {
		name: "name and id repeated in every fragment",
		chunks: []string{
			toolChunk(0, "c1", "lookup", `{"q":`),
			toolChunk(0, "c1", "lookup", `"go"}`),
			finishChunk("tool_calls"),
		},
		want: []artifact.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"q":"go"}`}},
	}, {
		name: "arguments that are not JSON are kept as sent",
		chunks: []string{
			toolChunk(0, "c1", "run", `{cmd: 'ls`),
			finishChunk("tool_calls"),
		},
		want: []artifact.ToolCall{{ID: "c1", Name: "run", Arguments: `{cmd: 'ls`}},
	}, {
		name: "a call without arguments",
		chunks: []string{
			chunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"now"}}]}`, "null"),
			finishChunk("tool_calls"),
		},
		want: []artifact.ToolCall{{ID: "c1", Name: "now", Arguments: ""}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sse(tc.chunks...))
			_, arts, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("go"))
			if err != nil {
				t.Fatal(err)
			}
			var got []artifact.ToolCall
			for _, a := range arts {
				if c, ok := a.(artifact.ToolCall); ok {
					got = append(got, c)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("calls = %#v", got)
			}
		})
	}
}

func TestStreamToolCallWithoutIDGetsOne(t *testing.T) {
	f := newFake(t, sse(
		chunk(`{"tool_calls":[{"index":0,"type":"function","function":{"name":"a","arguments":"{}"}}]}`, "null"),
		chunk(`{"tool_calls":[{"index":1,"type":"function","function":{"name":"b","arguments":"{}"}}]}`, "null"),
		finishChunk("tool_calls"),
	))
	_, arts, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("go"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := arts[0].(artifact.ToolCall), arts[1].(artifact.ToolCall)
	if !strings.HasPrefix(a.ID, "call_") || len(a.ID) != 29 || a.ID == b.ID || a.Name != "a" || b.Name != "b" {
		t.Errorf("calls = %#v, %#v", a, b)
	}
}

func TestStreamTolerates(t *testing.T) {
	cases := []struct {
		name string
		body string
	}{{
		name: "keep-alive comments and empty data lines",
		body: ": ping\n\ndata: " + textChunk("ok") + "\n\n: ping\n\ndata:\n\ndata: " + finishChunk("stop") + "\n\ndata: [DONE]\n\n",
	}, {
		name: "a first chunk with no choices, as Azure sends with prompt_filter_results",
		body: `data: {"id":"","object":"","created":0,"model":"","choices":[],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}` +
			"\n\ndata: " + textChunk("ok") + "\n\ndata: " + finishChunk("stop") + "\n\ndata: [DONE]\n\n",
	}, {
		name: "no space after data:, CRLF line ends, no usage chunk",
		body: "data:" + textChunk("ok") + "\r\n\r\ndata:" + finishChunk("stop") + "\r\n\r\ndata:[DONE]\r\n\r\n",
	}, {
		name: "nothing after [DONE] but the connection closing",
		body: "data: " + textChunk("ok") + "\n\ndata: " + finishChunk("stop") + "\n\ndata: [DONE]",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sseRaw(tc.body))
			_, arts, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("go"))
			if err != nil {
				t.Fatal(err)
			}
			want := []artifact.Artifact{artifact.Text{Content: "ok"}, artifact.Finish{Reason: "stop"}}
			if !reflect.DeepEqual(arts, want) {
				t.Errorf("artifacts = %#v", arts)
			}
		})
	}
}

func TestStreamRefusalIsText(t *testing.T) {
	f := newFake(t, sse(chunk(`{"role":"assistant","content":null,"refusal":"I can't help with that."}`, "null"), finishChunk("stop")))
	_, arts, err := providertest.CollectContext(t.Context(), f.provider(t), userReq("?"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (artifact.Text{Content: "I can't help with that."}); arts[0] != want {
		t.Errorf("artifacts = %#v", arts)
	}
}

func TestStreamConsumerStops(t *testing.T) {
	f := newFake(t, sse(textChunk("a"), textChunk("b"), finishChunk("stop")))
	p := f.provider(t)
	var got []artifact.Artifact
	for a, err := range p.Invoke(t.Context(), userReq("go")) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
		break
	}
	if want := []artifact.Artifact{artifact.TextDelta{Content: "a"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v", got)
	}
}

func TestWhole(t *testing.T) {
	body := `{"id":"chatcmpl-9","object":"chat.completion","created":1718000000,"model":"gpt-test-2024",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Checking.","reasoning_content":"hmm",` +
		`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}},` +
		`{"id":"call_2","type":"function","function":{"name":"b","arguments":"oops"}}]},"logprobs":null,"finish_reason":"tool_calls"}],` +
		`"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`
	f := newFake(t, jsonReply(200, body))
	deltas, arts, err := providertest.CollectContext(t.Context(), f.provider(t, WithStreaming(false)), userReq("go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) != 0 {
		t.Errorf("deltas = %#v", deltas)
	}
	want := []artifact.Artifact{
		artifact.Reasoning{Content: "hmm", Field: "reasoning_content"},
		artifact.Text{Content: "Checking."},
		artifact.ToolCall{ID: "call_1", Name: "a", Arguments: `{"x":1}`},
		artifact.ToolCall{ID: "call_2", Name: "b", Arguments: "oops"},
		artifact.Usage{InputTokens: 9, OutputTokens: 4},
		artifact.Finish{Reason: "tool_calls"},
	}
	if !reflect.DeepEqual(arts, want) {
		t.Errorf("artifacts = %#v", arts)
	}
	r := f.requests()[0]
	if r.Body["stream"] != false || r.Body["stream_options"] != nil {
		t.Errorf("stream = %v, stream_options = %v", r.Body["stream"], r.Body["stream_options"])
	}
}

// drain runs an invocation to its end and returns the error it ended with.
func drain(ctx context.Context, p provider.Provider, req *provider.Request) error {
	_, _, err := providertest.CollectContext(ctx, p, req)
	return err
}
