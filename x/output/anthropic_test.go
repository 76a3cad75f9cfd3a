package output_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/provider/anthropic"
)

// messagesAPI is a loopback server speaking the Messages API's stream: the
// n-th request gets the n-th reply (its events); every body is kept.
type messagesAPI struct {
	srv     *httptest.Server
	mu      sync.Mutex
	replies [][]string
	bodies  []map[string]json.RawMessage
}

func newMessagesAPI(t *testing.T, replies ...[]string) *messagesAPI {
	m := &messagesAPI{replies: replies}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]json.RawMessage
		_ = json.Unmarshal(b, &body)
		m.mu.Lock()
		m.bodies = append(m.bodies, body)
		var events []string
		if len(m.replies) > 0 {
			events, m.replies = m.replies[0], m.replies[1:]
		}
		m.mu.Unlock()
		if events == nil {
			w.WriteHeader(500)
			io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"no reply left"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			var head struct{ Type string }
			_ = json.Unmarshal([]byte(e), &head)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, e)
		}
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *messagesAPI) provider(t *testing.T, model string, opts ...anthropic.Option) *anthropic.Provider {
	p, err := anthropic.New(append([]anthropic.Option{anthropic.WithModel(model), anthropic.WithBaseURL(m.srv.URL),
		anthropic.WithEnv(func(string) string { return "" }), anthropic.WithMaxRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const claudeStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`

// claudeText streams s as one text block in pieces of n bytes.
func claudeText(s string, n int) []string {
	out := []string{claudeStart, `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`}
	for len(s) > 0 {
		k := min(n, len(s))
		b, _ := json.Marshal(s[:k])
		out = append(out, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(b)+`}}`)
		s = s[k:]
	}
	return append(out, `{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`, `{"type":"message_stop"}`)
}

// claudeCall streams one tool_use block.
func claudeCall(id, name, args string) []string {
	b, _ := json.Marshal(args)
	return []string{claudeStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":` + string(b) + `}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}`, `{"type":"message_stop"}`}
}

// ModeAuto with a Claude model that has structured outputs sends the
// answer's schema as output_config.format and reads the typed answer from
// the text; a correction after an invalid answer goes out the same way.
func TestOverClaudeStructuredOutputs(t *testing.T) {
	api := newMessagesAPI(t, claudeText(`{"category":"bug"}`, 4), claudeText(validTicket, 5))
	got, err := output.Run[ticket](t.Context(), nil, newThread(t), api.provider(t, "claude-sonnet-4-5"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantTicket) {
		t.Fatalf("got %+v", got)
	}
	want := `{"format":{"schema":{"additionalProperties":false,"properties":{"category":{"type":"string","enum":["bug","billing","other"]},"priority":{"type":"integer","description":"(maximum: 3; minimum: 1)"},"tags":{"items":{"type":"string"},"type":"array"}},"required":["category","priority","tags"],"type":"object"},"type":"json_schema"}}`
	for i, b := range api.bodies {
		if got := string(b["output_config"]); got != want {
			t.Errorf("request %d: output_config =\n%s\nwant\n%s", i, got, want)
		}
		if _, ok := b["tools"]; ok {
			t.Errorf("request %d offers tools", i)
		}
	}
	if len(api.bodies) != 2 || !strings.Contains(string(api.bodies[1]["messages"]), "Your answer was not accepted") {
		t.Fatalf("the second request does not carry the correction: %s", api.bodies[len(api.bodies)-1]["messages"])
	}
}

type withMap struct {
	Name   string         `json:"name"`
	Counts map[string]int `json:"counts"`
}

// Where structured outputs cannot carry the answer, ModeAuto offers the
// final-answer tool: a model without them, an option turning them off, a
// schema they refuse (a map).
func TestOverClaudeFallsBackToTool(t *testing.T) {
	for _, c := range []struct {
		name  string
		model string
		opts  []anthropic.Option
		run   func(p *anthropic.Provider) error
	}{
		{"older model", "claude-3-7-sonnet-latest", nil, func(p *anthropic.Provider) error {
			_, err := output.Run[ticket](t.Context(), nil, newThread(t), p)
			return err
		}},
		{"turned off", "claude-sonnet-4-5", []anthropic.Option{anthropic.WithStructuredOutputs(false)}, func(p *anthropic.Provider) error {
			_, err := output.Run[ticket](t.Context(), nil, newThread(t), p)
			return err
		}},
		{"map in the answer", "claude-sonnet-4-5", nil, func(p *anthropic.Provider) error {
			got, err := output.Run[withMap](t.Context(), nil, newThread(t), p)
			if err == nil && (got.Name != "a" || got.Counts["x"] != 1) {
				return fmt.Errorf("got %+v", got)
			}
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := validTicket
			if c.name == "map in the answer" {
				args = `{"name":"a","counts":{"x":1}}`
			}
			api := newMessagesAPI(t, claudeCall("toolu_1", "final_answer", args))
			if err := c.run(api.provider(t, c.model, c.opts...)); err != nil {
				t.Fatal(err)
			}
			b := api.bodies[0]
			if _, ok := b["output_config"]; ok {
				t.Fatal("output_config sent")
			}
			if got := string(b["tool_choice"]); got != `{"name":"final_answer","type":"tool"}` {
				t.Fatalf("tool_choice %s", got)
			}
		})
	}
}
