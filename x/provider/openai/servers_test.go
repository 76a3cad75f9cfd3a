package openai

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// Answers in the shapes real servers send, byte for byte: what lode makes
// of each (artifacts, usage) and what it sends back on the next request.

// sseCRLF streams lines ending in CRLF, with no data: [DONE].
func sseCRLF(chunks ...string) http.HandlerFunc {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\r\n\r\n")
	}
	return sseRaw(b.String())
}

// wholeChunk is a chunk with raw choices and usage.
func wholeChunk(choices, usage string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1718000000,"model":"m","choices":[` + choices + `],"usage":` + usage + `}`
}

// okReply answers "ok", streamed or whole as the request asks.
func okReply(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Accept") == "text/event-stream" {
		sse(textChunk("ok"), finishChunk("stop"))(w, r)
		return
	}
	jsonReply(200, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)(w, r)
}

const detailsSig = `EqQBCkYIBxgCKkA+/x==`

func TestServerShapes(t *testing.T) {
	// OpenRouter streams reasoning_details in fragments sharing an index,
	// next to the same text under "reasoning".
	orDetails := []string{
		`{"type":"reasoning.text","text":"Let me","format":"anthropic-claude-v1","index":0}`,
		`{"type":"reasoning.text","text":" check <x> & y.","format":"anthropic-claude-v1","index":0}`,
		`{"type":"reasoning.text","signature":"` + detailsSig + `","format":"anthropic-claude-v1","index":0}`,
		`{"type":"reasoning.encrypted","data":"gAAAAB<opaque>==","id":"rs_1","format":"openai-responses-v1","index":1}`,
	}
	orMerged := `[{"type":"reasoning.text","text":"Let me check <x> & y.","format":"anthropic-claude-v1","index":0,"signature":"` + detailsSig + `"},` + orDetails[3] + `]`
	// A whole answer's list, spaced as its server wrote it.
	wholeDetails := `[ {"type": "reasoning.summary", "summary": "Plan: <look>", "index": 0},
	  {"type": "reasoning.encrypted", "data": "enc/+==", "index": 1} ]`

	call := `"tool_calls":[{"id":"call_1","type":"function","function":{"name":"look","arguments":"{}"}}]`
	callMsg := `"tool_calls":[{"id":"call_1","type":"function","function":{"name":"look","arguments":"{}"}}]`

	cases := []struct {
		name   string
		reply  http.HandlerFunc
		opts   []Option
		arts   []artifact.Artifact
		sent   string // the assistant message of the follow-up request
		rawHas string // bytes the follow-up body must hold as they are
	}{{
		name: "Gemini: CRLF, finish and usage in one chunk, no [DONE]",
		reply: sseCRLF(
			wholeChunk(`{"index":0,"delta":{"role":"assistant","content":"Hello"}}`, "null"),
			wholeChunk(`{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}`,
				`{"prompt_tokens":7,"completion_tokens":2,"total_tokens":29}`),
		),
		arts: []artifact.Artifact{
			artifact.Text{Content: "Hello there"},
			artifact.Usage{InputTokens: 7, OutputTokens: 22, ReasoningTokens: 20},
			artifact.Finish{Reason: "stop"},
		},
		sent: `{"role":"assistant","content":"Hello there"}`,
	}, {
		name: "DeepSeek: reasoning_content and prompt_cache_hit_tokens",
		reply: sse(
			chunk(`{"role":"assistant","content":null,"reasoning_content":""}`, "null"),
			chunk(`{"content":null,"reasoning_content":"Think."}`, "null"),
			chunk(`{"content":"Done","reasoning_content":null}`, "null"),
			wholeChunk(`{"index":0,"delta":{"content":"","reasoning_content":null},"finish_reason":"stop"}`,
				`{"prompt_tokens":100,"completion_tokens":9,"total_tokens":109,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":5},"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}`),
		),
		arts: []artifact.Artifact{
			artifact.Reasoning{Content: "Think.", Field: "reasoning_content"},
			artifact.Text{Content: "Done"},
			artifact.Usage{InputTokens: 100, OutputTokens: 9, CachedInputTokens: 64, ReasoningTokens: 5},
			artifact.Finish{Reason: "stop"},
		},
		sent: `{"role":"assistant","content":"Done","reasoning_content":"Think."}`,
	}, {
		name: "DeepSeek, whole: only prompt_cache_hit_tokens",
		reply: jsonReply(200, `{"id":"x","object":"chat.completion","created":1,"model":"deepseek-reasoner","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"Done","reasoning_content":"Think."},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":100,"completion_tokens":9,"total_tokens":109,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}`),
		opts: []Option{WithStreaming(false)},
		arts: []artifact.Artifact{
			artifact.Reasoning{Content: "Think.", Field: "reasoning_content"},
			artifact.Text{Content: "Done"},
			artifact.Usage{InputTokens: 100, OutputTokens: 9, CachedInputTokens: 64},
			artifact.Finish{Reason: "stop"},
		},
		sent: `{"role":"assistant","content":"Done","reasoning_content":"Think."}`,
	}, {
		name: "vLLM, whole: message.reasoning goes back as reasoning",
		reply: jsonReply(200, `{"id":"x","object":"chat.completion","created":1,"model":"qwen3","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":null,"reasoning":"Need a tool.",`+call+`},"finish_reason":"tool_calls"}],`+
			`"usage":{"prompt_tokens":20,"completion_tokens":11,"total_tokens":31}}`),
		opts: []Option{WithStreaming(false)},
		arts: []artifact.Artifact{
			artifact.Reasoning{Content: "Need a tool.", Field: "reasoning"},
			artifact.ToolCall{ID: "call_1", Name: "look", Arguments: "{}"},
			artifact.Usage{InputTokens: 20, OutputTokens: 11},
			artifact.Finish{Reason: "tool_calls"},
		},
		sent: `{"role":"assistant","reasoning":"Need a tool.",` + callMsg + `}`,
	}, {
		name: "OpenRouter: streamed reasoning_details, joined by index",
		reply: sse(
			chunk(`{"role":"assistant","content":"","reasoning":"Let me","reasoning_details":[`+orDetails[0]+`]}`, "null"),
			chunk(`{"content":"","reasoning":" check <x> & y.","reasoning_details":[`+orDetails[1]+`]}`, "null"),
			chunk(`{"content":"","reasoning":null,"reasoning_details":[`+orDetails[2]+`,`+orDetails[3]+`]}`, "null"),
			chunk(`{"content":null,`+call+`}`, "null"),
			finishChunk("tool_calls"),
			wholeChunk(``, `{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42,"cost":0.0001,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":8}}`),
		),
		arts: []artifact.Artifact{
			artifact.Reasoning{Content: "Let me check <x> & y.", Field: "reasoning_details", Data: orMerged},
			artifact.ToolCall{ID: "call_1", Name: "look", Arguments: "{}"},
			artifact.Usage{InputTokens: 30, OutputTokens: 12, ReasoningTokens: 8},
			artifact.Finish{Reason: "tool_calls"},
		},
		sent:   `{"role":"assistant",` + callMsg + `,"reasoning_details":` + orMerged + `}`,
		rawHas: `,"reasoning_details":` + orMerged + `}`,
	}, {
		name: "OpenRouter, whole: reasoning_details kept byte for byte",
		reply: jsonReply(200, `{"id":"x","object":"chat.completion","created":1,"model":"openai/gpt-5","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"Sure.","reasoning":null,"reasoning_details":`+wholeDetails+`},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":5,"completion_tokens":40,"total_tokens":45,"completion_tokens_details":{"reasoning_tokens":38}}}`),
		opts: []Option{WithStreaming(false)},
		arts: []artifact.Artifact{
			artifact.Reasoning{Content: "Plan: <look>", Field: "reasoning_details", Data: wholeDetails},
			artifact.Text{Content: "Sure."},
			artifact.Usage{InputTokens: 5, OutputTokens: 40, ReasoningTokens: 38},
			artifact.Finish{Reason: "stop"},
		},
		sent:   `{"role":"assistant","content":"Sure.","reasoning_details":` + wholeDetails + `}`,
		rawHas: `"reasoning_details":` + wholeDetails + `}`,
	}, {
		name: "xAI: reasoning tokens beside completion_tokens",
		reply: sse(
			textChunk("Hi"), finishChunk("stop"),
			wholeChunk(``, `{"prompt_tokens":10,"completion_tokens":5,"total_tokens":35,"prompt_tokens_details":{"text_tokens":10,"cached_tokens":6},"completion_tokens_details":{"reasoning_tokens":20}}`),
		),
		arts: []artifact.Artifact{
			artifact.Text{Content: "Hi"},
			artifact.Usage{InputTokens: 10, OutputTokens: 25, CachedInputTokens: 6, ReasoningTokens: 20},
			artifact.Finish{Reason: "stop"},
		},
		sent: `{"role":"assistant","content":"Hi"}`,
	}, {
		name: "Moonshot: cached_tokens at the top of usage",
		reply: sse(
			textChunk("Hi"),
			wholeChunk(`{"index":0,"delta":{},"finish_reason":"stop","usage":{"prompt_tokens":50,"completion_tokens":1,"total_tokens":51,"cached_tokens":32}}`,
				`{"prompt_tokens":50,"completion_tokens":1,"total_tokens":51,"cached_tokens":32}`),
		),
		arts: []artifact.Artifact{
			artifact.Text{Content: "Hi"},
			artifact.Usage{InputTokens: 50, OutputTokens: 1, CachedInputTokens: 32},
			artifact.Finish{Reason: "stop"},
		},
		sent: `{"role":"assistant","content":"Hi"}`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.reply, okReply)
			p := f.provider(t, tc.opts...)
			_, arts, err := providertest.CollectContext(t.Context(), p, userReq("q"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(arts, tc.arts) {
				t.Errorf("artifacts =\n%#v\nwant\n%#v", arts, tc.arts)
			}
			next := userReq("q")
			next.Turns = append(next.Turns, ledger.Turn{Role: ledger.RoleAssistant, Artifacts: arts})
			for _, a := range arts {
				if c, ok := a.(artifact.ToolCall); ok {
					next.Turns = append(next.Turns, ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
						artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "seen"},
					}})
				}
			}
			next.Turns = append(next.Turns, ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "and?"}}})
			if err := drain(t.Context(), p, next); err != nil {
				t.Fatal(err)
			}
			got := f.requests()[1]
			msgs, _ := got.Body["messages"].([]any)
			if len(msgs) < 2 || !reflect.DeepEqual(msgs[1], toJSON(t, tc.sent)) {
				t.Errorf("follow-up body:\n%s\nwant its assistant message\n%s", got.Raw, tc.sent)
			}
			if tc.rawHas != "" && !bytes.Contains(got.Raw, []byte(tc.rawHas)) {
				t.Errorf("follow-up body:\n%s\ndoes not hold, byte for byte,\n%s", got.Raw, tc.rawHas)
			}
		})
	}
}

func TestStreamEndsWithNeither(t *testing.T) {
	f := newFake(t, sseCRLF(textChunk("Hel")))
	err := drain(t.Context(), f.provider(t), userReq("q"))
	want := "openai: incomplete response: the stream ended before data: [DONE] and without a finish reason"
	if !errors.Is(err, ErrIncomplete) || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// Reasoning sent back only where the server put it, and not at all when
// WithSendReasoning(false).
func TestReasoningSentBack(t *testing.T) {
	details := `[{"type":"reasoning.encrypted","data":"x"}]`
	other := `[{"type":"reasoning.text","text":"b","signature":"s"}]`
	cases := []struct {
		name string
		rs   []artifact.Artifact
		opts []Option
		want string
	}{
		{"no field: reasoning_content", []artifact.Artifact{artifact.Reasoning{Content: "r"}}, nil, `{"role":"assistant","content":"A","reasoning_content":"r"}`},
		{"reasoning", []artifact.Artifact{artifact.Reasoning{Content: "r", Field: "reasoning"}}, nil, `{"role":"assistant","content":"A","reasoning":"r"}`},
		{"details win over text", []artifact.Artifact{artifact.Reasoning{Content: "r", Field: "reasoning_details", Data: details}}, nil,
			`{"role":"assistant","content":"A","reasoning_details":` + details + `}`},
		{"two lists are joined", []artifact.Artifact{
			artifact.Reasoning{Content: "a", Field: "reasoning_details", Data: details},
			artifact.Reasoning{Content: "b", Field: "reasoning_details", Data: other},
		}, nil, `{"role":"assistant","content":"A","reasoning_details":[{"type":"reasoning.encrypted","data":"x"},{"type":"reasoning.text","text":"b","signature":"s"}]}`},
		{"turned off", []artifact.Artifact{artifact.Reasoning{Content: "r", Field: "reasoning_details", Data: details}}, []Option{WithSendReasoning(false)},
			`{"role":"assistant","content":"A"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sse(textChunk("ok"), finishChunk("stop")))
			req := userReq("q")
			req.Turns = append(req.Turns, ledger.Turn{Role: ledger.RoleAssistant, Artifacts: append(tc.rs, artifact.Text{Content: "A"})})
			if err := drain(t.Context(), f.provider(t, tc.opts...), req); err != nil {
				t.Fatal(err)
			}
			got := f.requests()[0]
			msgs, _ := got.Body["messages"].([]any)
			if len(msgs) != 2 || !reflect.DeepEqual(msgs[1], toJSON(t, tc.want)) {
				t.Errorf("body:\n%s\nwant assistant message\n%s", got.Raw, tc.want)
			}
		})
	}
}

func TestReasoningDetailsBroken(t *testing.T) {
	// Stored Data that is not a list cannot be sent back.
	f := newFake(t)
	req := userReq("q")
	req.Turns = append(req.Turns, ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{
		artifact.Reasoning{Field: "reasoning_details", Data: `{"type":"x"}`}, artifact.Text{Content: "A"},
	}})
	err := drain(t.Context(), f.provider(t), req)
	var re *RequestError
	if !errors.As(err, &re) || err.Error() != `openai: request: turn 1 (assistant): reasoning_details: {"type":"x"} is not a JSON list` {
		t.Fatalf("err = %v", err)
	}
	// A server sending something else than a list of objects.
	f = newFake(t, sse(chunk(`{"reasoning_details":{"type":"reasoning.text"}}`, "null"), finishChunk("stop")))
	err = drain(t.Context(), f.provider(t), userReq("q"))
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "chunk 1 has reasoning_details that are not a list of objects") {
		t.Fatalf("err = %v", err)
	}
}

// Reasoning counted beside completion_tokens counts against WithMaxTokens.
func TestReasoningTokensCountAgainstMaxTokens(t *testing.T) {
	first := sse(toolChunk(0, "call_1", "look", "{}"), finishChunk("tool_calls"),
		wholeChunk(``, `{"prompt_tokens":10,"completion_tokens":5,"total_tokens":35,"completion_tokens_details":{"reasoning_tokens":20}}`))
	f := newFake(t, first)
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if c, ok := a.(artifact.ToolCall); ok {
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{
				artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "seen"},
			}})
		}
		return nil
	})
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "q"})
	_, err := loop.New(loop.WithHandlers(h), loop.WithMaxTokens(30)).Run(t.Context(), th, f.provider(t))
	var le *loop.LimitError
	if !errors.As(err, &le) || le.Used != 35 {
		t.Fatalf("err = %v, want a token LimitError with 35 used", err)
	}
}
