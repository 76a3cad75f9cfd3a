package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/openai"
	xtool "github.com/lodeworks/lode/x/tool"
)

// chatServer is a stand-in for a chat-completions server on 127.0.0.1:
// it streams each of replies in turn, one chunk per string, a "call:"
// prefix making a tool call of the rest ("name {json}").
func chatServer(replies ...[]string) *httptest.Server {
	var (
		mu sync.Mutex
		n  int
	)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		reply := replies[n]
		n++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		finish := "stop"
		for i, part := range reply {
			delta := map[string]any{"content": part}
			if call, ok := strings.CutPrefix(part, "call:"); ok {
				name, args, _ := strings.Cut(call, " ")
				delta = map[string]any{"tool_calls": []any{map[string]any{
					"index": i, "id": fmt.Sprintf("call_%d", i), "type": "function",
					"function": map[string]any{"name": name, "arguments": args},
				}}}
				finish = "tool_calls"
			}
			writeChunk(w, []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}, nil)
		}
		writeChunk(w, []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
		writeChunk(w, []any{}, map[string]any{"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27})
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

func writeChunk(w io.Writer, choices []any, usage any) {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1718000000,
		"model": "gpt-4o-mini", "choices": choices, "usage": usage,
	})
	fmt.Fprintf(w, "data: %s\n\n", b)
}

func ExampleNew() {
	srv := chatServer([]string{"Hello", ", world"})
	defer srv.Close()

	prov, err := openai.New(
		openai.WithAPIKey("sk-example"),
		openai.WithModel("gpt-4o-mini"),
		openai.WithBaseURL(srv.URL+"/v1"),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &provider.Request{Turns: []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Say hello."}}},
	}}
	for a, err := range prov.Invoke(context.Background(), req) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch a := a.(type) {
		case artifact.TextDelta:
			fmt.Printf("delta %q\n", a.Content)
		case artifact.Text:
			fmt.Printf("text  %q\n", a.Content)
		case artifact.Usage:
			fmt.Printf("usage %d in, %d out\n", a.InputTokens, a.OutputTokens)
		case artifact.Finish:
			fmt.Printf("finish %s\n", a.Reason)
		}
	}
	// Output:
	// delta "Hello"
	// delta ", world"
	// text  "Hello, world"
	// usage 20 in, 7 out
	// finish stop
}

// The seed's wiring: a registry, the x/tool handler, and the registry's
// tools offered on every turn with openai.WithTools.
func ExampleWithTools() {
	srv := chatServer(
		[]string{`call:add {"a":2,"b":40}`},
		[]string{"2 + 40 = 42"},
	)
	defer srv.Close()

	registry := tool.NewRegistry()
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`)
	_ = registry.Register(tool.Tool{Name: "add", Description: "Add two numbers.", Schema: schema},
		func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
			return args["a"].(float64) + args["b"].(float64), nil
		})

	prov, err := openai.New(openai.WithAPIKey("sk-example"), openai.WithModel("gpt-4o-mini"), openai.WithBaseURL(srv.URL+"/v1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(registry)),
		loop.WithInvokeOptions(openai.WithTools(registry.Tools())),
	)
	state := ledger.NewThread()
	_ = state.Append(ledger.RoleUser, artifact.Text{Content: "What is 2 + 40?"})
	if _, err := step.Run(context.Background(), state, prov); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range state.Turns() {
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.Text:
				fmt.Printf("%s: %s\n", t.Role, a.Content)
			case artifact.ToolCall:
				fmt.Printf("%s: call %s %s\n", t.Role, a.Name, a.Arguments)
			case artifact.ToolResult:
				fmt.Printf("%s: %s\n", t.Role, a.Content)
			}
		}
	}
	// Output:
	// user: What is 2 + 40?
	// assistant: call add {"a":2,"b":40}
	// tool: 42
	// assistant: 2 + 40 = 42
}

func ExampleCheckStrict() {
	for _, s := range []string{
		`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`,
		`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"],"additionalProperties":false}`,
	} {
		if err := openai.CheckStrict(json.RawMessage(s)); err != nil {
			fmt.Println("not strict:", err)
		} else {
			fmt.Println("strict")
		}
	}
	// Output:
	// strict
	// not strict: #: property "n" is not required
}

// A local server such as Ollama needs no key: a base URL is enough.
func ExampleWithBaseURL() {
	prov, err := openai.New(openai.WithModel("llama3.2"), openai.WithBaseURL("http://127.0.0.1:11434/v1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(prov.Model(), prov.BaseURL())
	// Output:
	// llama3.2 http://127.0.0.1:11434/v1
}
