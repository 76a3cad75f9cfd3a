package output_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/provider/openai/openaitest"
	xtool "github.com/lodeworks/lode/x/tool"
)

// wire is a loopback server speaking the chat-completions stream: the
// n-th request gets the n-th reply (the data of its chunks); every request
// body is kept.
type wire struct {
	srv *openaitest.Server
}

func newWire(t *testing.T, replies ...[]string) *wire {
	handlers := make([]http.HandlerFunc, len(replies))
	for i, r := range replies {
		handlers[i] = openaitest.Stream(r...)
	}
	return &wire{srv: openaitest.NewServer(t, handlers...)}
}

func (w *wire) requests() []map[string]any {
	var bodies []map[string]any
	for _, r := range w.srv.Requests() {
		bodies = append(bodies, r.Body)
	}
	return bodies
}

func (w *wire) provider(t *testing.T, opts ...openai.Option) *openai.Provider {
	p, err := openai.New(append([]openai.Option{openai.WithModel("m"), openai.WithBaseURL(w.srv.BaseURL()), openai.WithHTTPClient(w.srv.Client())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func chunk(delta, finish string) string {
	return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
}

// textReply streams s in pieces of n bytes.
func textReply(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		k := min(n, len(s))
		b, _ := json.Marshal(s[:k])
		out = append(out, chunk(`{"content":`+string(b)+`}`, "null"))
		s = s[k:]
	}
	return append(out, chunk(`{}`, `"stop"`))
}

// callReply streams one tool call, its arguments in pieces of n bytes.
func callReply(id, name, args string, n int) []string {
	out := []string{chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, id, name), "null")}
	for len(args) > 0 {
		k := min(n, len(args))
		b, _ := json.Marshal(args[:k])
		out = append(out, chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(b)+`}}]}`, "null"))
		args = args[k:]
	}
	return append(out, chunk(`{}`, `"tool_calls"`))
}

func TestOverOpenAIWire(t *testing.T) {
	schema, _ := tool.SchemaFor[ticket]()
	var schemaV any
	_ = json.Unmarshal(schema, &schemaV)
	wantFormat := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "ticket", "schema": schemaV, "strict": true}}
	wantChoice := map[string]any{"type": "function", "function": map[string]any{"name": "final_answer"}}

	cases := []struct {
		name     string
		opts     []openai.Option
		replies  [][]string
		tools    bool
		wantErr  bool
		check    func(t *testing.T, bodies []map[string]any)
		partials bool
	}{
		{name: "response_format, valid first time", opts: []openai.Option{openai.WithJSONSchemaFormat(true)},
			replies: [][]string{textReply(validTicket, 7)}, partials: true,
			check: func(t *testing.T, b []map[string]any) {
				if !reflect.DeepEqual(b[0]["response_format"], wantFormat) {
					t.Fatalf("response_format %v\nwant %v", b[0]["response_format"], wantFormat)
				}
				if _, ok := b[0]["tools"]; ok {
					t.Fatal("tools sent")
				}
			}},
		{name: "response_format, invalid then valid", opts: []openai.Option{openai.WithJSONSchemaFormat(true)},
			replies: [][]string{textReply(`{"category":"bug"}`, 5), textReply(validTicket, 5)},
			check: func(t *testing.T, b []map[string]any) {
				msgs := b[1]["messages"].([]any)
				if len(msgs) != 3 {
					t.Fatalf("%d messages", len(msgs))
				}
				if m := msgs[1].(map[string]any); m["role"] != "assistant" || m["content"] != `{"category":"bug"}` {
					t.Fatalf("message 1 %v", m)
				}
				m := msgs[2].(map[string]any)
				if m["role"] != "user" || !strings.HasPrefix(m["content"].(string), "Your answer was not accepted: the answer does not match the schema: ") {
					t.Fatalf("message 2 %v", m)
				}
			}},
		{name: "response_format, never valid", opts: []openai.Option{openai.WithJSONSchemaFormat(true)},
			replies: [][]string{textReply(`{}`, 9), textReply(`{}`, 9), textReply(`no`, 9)}, wantErr: true},
		{name: "fallback tool, valid first time",
			replies: [][]string{callReply("call_1", "final_answer", validTicket, 4)}, partials: true,
			check: func(t *testing.T, b []map[string]any) {
				if _, ok := b[0]["response_format"]; ok {
					t.Fatal("response_format sent to a server not known to take it")
				}
				if !reflect.DeepEqual(b[0]["tool_choice"], wantChoice) {
					t.Fatalf("tool_choice %v", b[0]["tool_choice"])
				}
				tools := b[0]["tools"].([]any)
				fn := tools[0].(map[string]any)["function"].(map[string]any)
				if len(tools) != 1 || fn["name"] != "final_answer" || !reflect.DeepEqual(fn["parameters"], schemaV) || fn["strict"] != true {
					t.Fatalf("tools %v", tools)
				}
			}},
		{name: "fallback tool, invalid then valid",
			replies: [][]string{callReply("call_1", "final_answer", `{"category":"bug","priority":9,"tags":[]}`, 8), callReply("call_2", "final_answer", validTicket, 8)},
			check: func(t *testing.T, b []map[string]any) {
				msgs := b[1]["messages"].([]any)
				if m := msgs[1].(map[string]any); m["role"] != "assistant" || m["content"] != `{"category":"bug","priority":9,"tags":[]}` || m["tool_calls"] != nil {
					t.Fatalf("message 1 %v: the final call goes back as text", m)
				}
				if m := msgs[2].(map[string]any); m["role"] != "user" || !strings.Contains(m["content"].(string), "Answer again by calling final_answer") {
					t.Fatalf("message 2 %v", m)
				}
			}},
		{name: "fallback tool, never valid",
			replies: [][]string{callReply("a", "final_answer", `{}`, 3), callReply("b", "final_answer", `[]`, 3), callReply("c", "final_answer", `no`, 3)}, wantErr: true},
		{name: "tools then answer, fallback", tools: true,
			replies: [][]string{callReply("call_1", "lookup", `{"user":"ann"}`, 5), callReply("call_2", "final_answer", validTicket, 5)}, partials: true,
			check: func(t *testing.T, b []map[string]any) {
				if b[0]["tool_choice"] != "required" {
					t.Fatalf("tool_choice %v", b[0]["tool_choice"])
				}
				msgs := b[1]["messages"].([]any)
				if m := msgs[2].(map[string]any); m["role"] != "tool" || m["content"] != "ann is on the free plan" {
					t.Fatalf("tool message %v", m)
				}
			}},
		{name: "tools then answer, response_format", tools: true, opts: []openai.Option{openai.WithJSONSchemaFormat(true)},
			replies: [][]string{callReply("call_1", "lookup", `{"user":"ann"}`, 5), textReply(validTicket, 3)}, partials: true,
			check: func(t *testing.T, b []map[string]any) {
				for i := range b {
					if !reflect.DeepEqual(b[i]["response_format"], wantFormat) {
						t.Fatalf("request %d response_format %v", i, b[i]["response_format"])
					}
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWire(t, tc.replies...)
			reg := tool.NewRegistry()
			if tc.tools {
				if err := tool.RegisterFunc(reg, "lookup", "Look a user up", func(_ context.Context, in lookupIn) (string, error) {
					return in.User + " is on the free plan", nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			rec := &recorder{}
			step := loop.New(
				loop.WithHandlers(xtool.NewHandler(reg)),
				loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
				loop.WithObserver(output.Partials[ticket](rec)),
			)
			got, err := output.Run[ticket](t.Context(), step, newThread(t), w.provider(t, tc.opts...))
			if tc.wantErr {
				var ie *output.InvalidError
				if !errors.As(err, &ie) || ie.Attempts != 3 || ie.Last != "no" {
					t.Fatalf("error %v, want *InvalidError after 3 with the last answer", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantTicket) {
				t.Fatalf("got %+v", got)
			}
			if err := step.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if tc.partials {
				var last *output.PartialEvent[ticket]
				n := 0
				for _, ev := range rec.all() {
					if p, ok := ev.(output.PartialEvent[ticket]); ok {
						last = &p
						n++
					}
				}
				if n < 2 || last == nil || !reflect.DeepEqual(last.Value, wantTicket) {
					t.Fatalf("%d partial values, last %+v", n, last)
				}
			}
			if tc.check != nil {
				tc.check(t, w.requests())
			}
		})
	}
}
