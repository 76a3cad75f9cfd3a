package anthropic

import (
	"errors"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

func userTurn(s string) ledger.Turn {
	return ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: s}}}
}

func TestStreamTextUsageAndCache(t *testing.T) {
	f := newFake(t, sse(
		msgStart(`{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":5000,"output_tokens":1}`),
		blockStart(0, `{"type":"text","text":""}`), ping,
		blockDelta(0, textDelta("Hel")), blockDelta(0, textDelta("lo")), blockStop(0),
		msgDelta("end_turn", `{"output_tokens":7}`), msgStop))
	p := f.provider(t)
	deltas, whole, err := collect(p, &provider.Request{Turns: []ledger.Turn{userTurn("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	wantDeltas := []artifact.Artifact{artifact.TextDelta{Content: "Hel"}, artifact.TextDelta{Content: "lo"}}
	wantWhole := []artifact.Artifact{
		artifact.Text{Content: "Hello"},
		artifact.Usage{InputTokens: 5312, OutputTokens: 7, CachedInputTokens: 5000, CacheWriteTokens: 300},
		artifact.Finish{Reason: "stop"},
	}
	if !reflect.DeepEqual(deltas, wantDeltas) || !reflect.DeepEqual(whole, wantWhole) {
		t.Fatalf("deltas %#v\nwhole %#v", deltas, whole)
	}
	b := f.body(0)
	if b["stream"] != true || b["model"] != "claude-sonnet-4-5" || b["max_tokens"] != float64(DefaultMaxTokens) {
		t.Errorf("body = %s", js(b))
	}
	if h := f.headers[0]; h.Get("Authorization") != "Bearer test-key" || h.Get("Anthropic-Version") == "" {
		t.Errorf("headers = %v", h)
	}
}

// Parallel tool calls come back whole, in block order, with their
// arguments exactly as streamed, and their deltas carry the call's index.
func TestStreamParallelToolCalls(t *testing.T) {
	f := newFake(t, sse(
		msgStart(`{"input_tokens":5,"output_tokens":1}`),
		blockStart(0, `{"type":"text","text":"Let me look."}`), blockStop(0),
		blockStart(1, `{"type":"tool_use","id":"toolu_a","name":"add","input":{}}`),
		blockDelta(1, `{"type":"input_json_delta","partial_json":"{\"a\": 1,"}`),
		blockDelta(1, `{"type":"input_json_delta","partial_json":" \"b\": 2}"}`), blockStop(1),
		blockStart(2, `{"type":"tool_use","id":"toolu_b","name":"now","input":{}}`),
		blockDelta(2, `{"type":"input_json_delta","partial_json":""}`), blockStop(2),
		msgDelta("tool_use", `{"output_tokens":30}`), msgStop))
	deltas, whole, err := collect(f.provider(t), &provider.Request{Turns: []ledger.Turn{userTurn("add")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []artifact.Artifact{
		artifact.Text{Content: "Let me look."},
		artifact.ToolCall{ID: "toolu_a", Name: "add", Arguments: `{"a": 1, "b": 2}`},
		artifact.ToolCall{ID: "toolu_b", Name: "now", Arguments: `{}`},
		artifact.Usage{InputTokens: 5, OutputTokens: 30},
		artifact.Finish{Reason: "tool_calls"},
	}
	if !reflect.DeepEqual(whole, want) {
		t.Fatalf("whole = %#v", whole)
	}
	wantDeltas := []artifact.Artifact{
		artifact.TextDelta{Content: "Let me look."},
		artifact.ToolCallDelta{Index: 0, ID: "toolu_a", Name: "add"},
		artifact.ToolCallDelta{Index: 0, Arguments: `{"a": 1,`},
		artifact.ToolCallDelta{Index: 0, Arguments: ` "b": 2}`},
		artifact.ToolCallDelta{Index: 1, ID: "toolu_b", Name: "now"},
	}
	if !reflect.DeepEqual(deltas, wantDeltas) {
		t.Fatalf("deltas = %#v", deltas)
	}
}

// Every way a stream can break gives a typed error, never a short answer.
func TestStreamBroken(t *testing.T) {
	start := msgStart(`{"input_tokens":1,"output_tokens":1}`)
	text := blockStart(0, `{"type":"text","text":""}`)
	cases := []struct {
		name string
		rep  reply
		kind error
	}{
		{"no message_stop", sse(start, text, blockDelta(0, textDelta("x")), blockStop(0), msgDelta("end_turn", `{"output_tokens":1}`)), ErrIncomplete},
		{"empty stream", reply{sse: true}, ErrIncomplete},
		{"no stop reason", sse(start, msgStop), ErrIncomplete},
		{"cut connection", reply{sse: true, partial: true, body: "event: message_start\ndata: " + start + "\n\n"}, ErrIncomplete},
		{"not json", reply{sse: true, body: "event: message_start\ndata: {nope\n\n"}, ErrMalformed},
		{"delta before start", sse(blockDelta(0, textDelta("x"))), ErrMalformed},
		{"block out of order", sse(start, blockStart(1, `{"type":"text","text":""}`)), ErrMalformed},
		{"delta to unknown block", sse(start, blockDelta(3, textDelta("x"))), ErrMalformed},
		{"delta after stop", sse(start, text, blockStop(0), blockDelta(0, textDelta("x"))), ErrMalformed},
		{"wrong delta type", sse(start, text, blockDelta(0, `{"type":"input_json_delta","partial_json":"{"}`)), ErrMalformed},
		{"second message_start", sse(start, start), ErrMalformed},
		{"tool call without name", sse(start, blockStart(0, `{"type":"tool_use","id":"t","name":"","input":{}}`), blockStop(0), msgDelta("tool_use", `{"output_tokens":1}`), msgStop), ErrInvalidToolCall},
		{"duplicate tool IDs", sse(start, blockStart(0, `{"type":"tool_use","id":"t","name":"a","input":{}}`), blockStop(0),
			blockStart(1, `{"type":"tool_use","id":"t","name":"b","input":{}}`), blockStop(1), msgDelta("tool_use", `{"output_tokens":1}`), msgStop), ErrInvalidToolCall},
		{"bad error event", reply{sse: true, body: "event: error\ndata: [1]\n\n"}, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, c.rep)
			_, whole, err := collect(f.provider(t), &provider.Request{Turns: []ledger.Turn{userTurn("x")}})
			var re *ResponseError
			if !errors.Is(err, c.kind) || !errors.As(err, &re) {
				t.Fatalf("err = %v (%T), whole = %v; want a *ResponseError of kind %v", err, err, whole, c.kind)
			}
			if len(whole) != 0 {
				t.Fatalf("whole artifacts yielded before the error: %v", whole)
			}
		})
	}
}

// An error event inside the stream is an *APIError matched by its type.
func TestStreamErrorEvent(t *testing.T) {
	f := newFake(t, sse(msgStart(`{"input_tokens":1,"output_tokens":1}`),
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	_, _, err := collect(f.provider(t), &provider.Request{Turns: []ledger.Turn{userTurn("x")}})
	var ae *APIError
	if !errors.As(err, &ae) || !errors.Is(err, ErrOverloaded) || ae.StatusCode != 0 || ae.Message != "Overloaded" {
		t.Fatalf("err = %v (%#v)", err, ae)
	}
}

func TestWholeAnswer(t *testing.T) {
	f := newFake(t, reply{body: `{"id":"msg_w","type":"message","role":"assistant","model":"claude-sonnet-4-5",
		"content":[{"type":"thinking","thinking":"hmm","signature":"sig=="},{"type":"redacted_thinking","data":"RED"},
		{"type":"text","text":"ok"},{"type":"tool_use","id":"toolu_1","name":"add","input":{"a":1}}],
		"stop_reason":"tool_use","stop_sequence":null,
		"usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":100,"cache_creation_input_tokens":0}}`})
	deltas, whole, err := collect(f.provider(t, WithStreaming(false)), &provider.Request{Turns: []ledger.Turn{userTurn("x")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []artifact.Artifact{
		artifact.Reasoning{Content: "hmm", Signature: "sig=="},
		artifact.Reasoning{Field: "redacted_thinking", Data: "RED"},
		artifact.Text{Content: "ok"},
		artifact.ToolCall{ID: "toolu_1", Name: "add", Arguments: `{"a":1}`},
		artifact.Usage{InputTokens: 103, OutputTokens: 4, CachedInputTokens: 100},
		artifact.Finish{Reason: "tool_calls"},
	}
	if len(deltas) != 0 || !reflect.DeepEqual(whole, want) {
		t.Fatalf("deltas %v\nwhole %#v", deltas, whole)
	}
	if _, ok := f.body(0)["stream"]; ok {
		t.Errorf("a whole request asked for a stream: %s", js(f.body(0)))
	}
}

func TestWholeAnswerBroken(t *testing.T) {
	cases := []struct {
		name string
		body string
		kind error
	}{
		{"not JSON", `{nope`, ErrMalformed},
		{"no stop reason", `{"id":"m","type":"message","role":"assistant","model":"x","content":[{"type":"text","text":"a"}],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}`, ErrIncomplete},
		{"tool call without ID", `{"id":"m","type":"message","role":"assistant","model":"x","content":[{"type":"tool_use","id":"","name":"a","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`, ErrInvalidToolCall},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, reply{body: c.body})
			_, whole, err := collect(f.provider(t, WithStreaming(false)), req(userTurn("x")))
			var re *ResponseError
			if !errors.Is(err, c.kind) || !errors.As(err, &re) || len(whole) != 0 {
				t.Fatalf("err = %v (%T), whole = %v; want kind %v", err, err, whole, c.kind)
			}
		})
	}
}
