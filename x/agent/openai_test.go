package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/agent"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
)

// wire is a chat-completions server on 127.0.0.1 that streams canned
// replies in order — a reply starting "call:" is a tool call ("call:name
// {json}") — and keeps every request body.
type wire struct {
	srv *openaitest.Server
}

func newWire(t *testing.T, replies ...string) *wire {
	handlers := make([]http.HandlerFunc, len(replies))
	for n, r := range replies {
		handlers[n] = streamReply(n, r)
	}
	return &wire{srv: openaitest.NewServer(t, handlers...)}
}

// streamReply is reply n as chunks: its text or tool call, the finish
// reason, and usage.
func streamReply(n int, reply string) http.HandlerFunc {
	delta, finish := map[string]any{"content": reply}, "stop"
	if call, ok := strings.CutPrefix(reply, "call:"); ok {
		name, args, _ := strings.Cut(call, " ")
		delta = map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": fmt.Sprintf("call_%d", n), "type": "function",
			"function": map[string]any{"name": name, "arguments": args},
		}}}
		finish = "tool_calls"
	}
	chunk := func(choices []any, usage any) string {
		b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1,
			"model": "gpt-test", "choices": choices, "usage": usage})
		return string(b)
	}
	return openaitest.Stream(
		chunk([]any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}, nil),
		chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil),
		chunk([]any{}, map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}),
	)
}

// request returns what request i (from 0) sent: the tool names offered
// and the last message's role and content.
func (w *wire) request(i int) (tools, role, content string) {
	b := w.srv.Requests()[i].Body
	var names []string
	if ts, ok := b["tools"].([]any); ok {
		for _, t := range ts {
			names = append(names, t.(map[string]any)["function"].(map[string]any)["name"].(string))
		}
	}
	msgs := b["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	c, _ := last["content"].(string)
	return strings.Join(names, ","), last["role"].(string), c
}

func (w *wire) provider(t *testing.T, tracer trace.Tracer) *openai.Provider {
	t.Helper()
	opts := []openai.Option{openai.WithAPIKey("sk-test"), openai.WithModel("gpt-test"),
		openai.WithBaseURL(w.srv.BaseURL()), openai.WithHTTPClient(w.srv.Client())}
	if tracer != nil {
		opts = append(opts, openai.WithTracer(tracer))
	}
	p, err := openai.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The three-level tree over the OpenAI wire format: every level's model
// is a real adapter talking HTTP, and results climb back up the tree.
func TestThreeLevelTreeOverOpenAI(t *testing.T) {
	w := newWire(t,
		`call:research {"task":"look into go"}`,   // 0 top
		`call:summarise {"task":"summarise: go"}`, // 1 research
		`call:count_words {"text":"go is fun"}`,   // 2 summarise
		"three words",                             // 3 summarise
		"found: three words",                      // 4 research
		"done",                                    // 5 top
	)
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	prov := w.provider(t, tracer)

	sumReg := tool.NewRegistry()
	if err := tool.RegisterFunc(sumReg, "count_words", "Count words", func(_ context.Context, in wordsIn) (int, error) {
		return len(strings.Fields(in.Text)), nil
	}); err != nil {
		t.Fatal(err)
	}
	resReg := tool.NewRegistry()
	mustRegister(t, resReg, mustNew(t, "summarise", agent.WithProvider(prov), agent.WithRegistry(sumReg),
		agent.WithTracer(tracer), agent.WithSystemPrompt("Summarise in three words.")))
	topReg := tool.NewRegistry()
	mustRegister(t, topReg, mustNew(t, "research", agent.WithProvider(prov), agent.WithRegistry(resReg), agent.WithTracer(tracer)))

	top, res := parentRun(t, context.Background(), topReg, nil, prov, tracer, "research go")
	if len(res) != 1 || res[0].IsError || res[0].Content != "found: three words" {
		t.Fatalf("top results %+v", res)
	}
	for i, want := range []struct{ tools, role, content string }{
		{"research", "user", "research go"},
		{"summarise", "user", "look into go"},
		{"count_words", "user", "summarise: go"},
		{"count_words", "tool", "3"},
		{"summarise", "tool", "three words"},
		{"research", "tool", "found: three words"},
	} {
		tools, role, content := w.request(i)
		if tools != want.tools || role != want.role || content != want.content {
			t.Errorf("request %d: tools %s, last %s %q; want %+v", i, tools, role, content, want)
		}
	}
	first := w.srv.Requests()[2].Body["messages"].([]any)[0].(map[string]any)
	if first["role"] != "system" || first["content"] != "Summarise in three words." {
		t.Errorf("summariser's first message %v", first)
	}
	if id, _ := top.Metadata(agent.MetaChildPrefix + "call_0"); id == "" {
		t.Error("top thread does not link its child")
	}

	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, sp := range spans {
		byID[sp.SpanContext().SpanID()] = sp
	}
	var chains []string
	for _, sp := range spans {
		if !strings.HasPrefix(sp.Name(), "chat ") {
			continue
		}
		var chain []string
		for p := sp; p != nil; p = byID[p.Parent().SpanID()] {
			if strings.HasPrefix(p.Name(), "execute_tool") || strings.HasPrefix(p.Name(), "chat") {
				chain = append(chain, p.Name())
			}
		}
		chains = append(chains, strings.Join(chain, " < "))
	}
	want := []string{
		"chat gpt-test",
		"chat gpt-test < execute_tool research",
		"chat gpt-test < execute_tool summarise < execute_tool research",
		"chat gpt-test < execute_tool summarise < execute_tool research",
		"chat gpt-test < execute_tool research",
		"chat gpt-test",
	}
	if strings.Join(chains, "\n") != strings.Join(want, "\n") {
		t.Errorf("chat spans nest as\n%s\nwant\n%s", strings.Join(chains, "\n"), strings.Join(want, "\n"))
	}
}

// An agent that mounts itself, over the OpenAI wire format, is stopped by
// the depth limit; the refusal reaches the deepest model as a tool result.
func TestRecursionOverOpenAI(t *testing.T) {
	w := newWire(t,
		`call:helper {"task":"again"}`, // top
		`call:helper {"task":"again"}`, // depth 1
		`call:helper {"task":"again"}`, // depth 2
		`call:helper {"task":"again"}`, // depth 3: refused
		"level 3 gave up",
		"level 2 done",
		"level 1 done",
		"top done",
	)
	prov := w.provider(t, nil)
	reg := tool.NewRegistry()
	mustRegister(t, reg, mustNew(t, "helper", agent.WithProvider(prov), agent.WithRegistry(reg)))
	th, res := parentRun(t, context.Background(), reg, nil, prov, nil, "go")
	if len(res) != 1 || res[0].Content != "level 1 done" || lastText(th) != "top done" {
		t.Fatalf("top results %+v", res)
	}
	_, role, content := w.request(4)
	want := "the agent helper was not started: agents are already nested 3 deep here, the most allowed. Do this part yourself, with the tools you have."
	if role != "tool" || content != want {
		t.Errorf("deepest model read %s %q\nwant %q", role, content, want)
	}
	if _, ok := th.Metadata(agent.MetaChildPrefix + "call_0"); !ok {
		t.Error("no child link on the top thread")
	}
}
