package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/lodeworks/lode/x/provider/openai/openaitest"
)

// fakeServer speaks the chat-completions wire format on 127.0.0.1. It
// answers the n-th request with the n-th reply and records every request.
type fakeServer struct {
	srv *openaitest.Server
}

type recorded = openaitest.Request

func newFake(t *testing.T, replies ...http.HandlerFunc) *fakeServer {
	t.Helper()
	return &fakeServer{srv: openaitest.NewServer(t, replies...)}
}

func (f *fakeServer) requests() []recorded { return f.srv.Requests() }

func noSleep(context.Context, time.Duration) error { return nil }

// provider returns a Provider aimed at f that never waits between retries.
func (f *fakeServer) provider(t *testing.T, opts ...Option) *Provider {
	t.Helper()
	base := []Option{
		WithAPIKey("sk-test"), WithModel("gpt-test"), WithBaseURL(f.srv.BaseURL()),
		WithHTTPClient(f.srv.Client()), withSleep(noSleep),
	}
	p, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// chunk is a chat.completion.chunk as OpenAI sends it, with delta and
// finish_reason given as raw JSON.
func chunk(delta, finish string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1718000000,"model":"gpt-test-2024",` +
		`"system_fingerprint":"fp_1","choices":[{"index":0,"delta":` + delta +
		`,"logprobs":null,"finish_reason":` + finish + `}],"usage":null}`
}

// textChunk is a delta carrying content s.
func textChunk(s string) string {
	b, _ := json.Marshal(s)
	return chunk(`{"content":`+string(b)+`}`, "null")
}

func roleChunk() string { return chunk(`{"role":"assistant","content":"","refusal":null}`, "null") }

func finishChunk(reason string) string { return chunk(`{}`, `"`+reason+`"`) }

// usageChunk is the final chunk include_usage asks for: no choices.
func usageChunk(in, out int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1718000000,"model":"gpt-test-2024",`+
		`"system_fingerprint":"fp_1","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,`+
		`"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},`+
		`"completion_tokens_details":{"reasoning_tokens":2,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
		in, out, in+out)
}

// toolChunk is a tool_calls fragment; id and name are sent when not empty.
func toolChunk(index int, id, name, args string) string {
	a, _ := json.Marshal(args)
	var tc string
	if id != "" {
		tc = fmt.Sprintf(`{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}`, index, id, name, a)
	} else {
		tc = fmt.Sprintf(`{"index":%d,"function":{"arguments":%s}}`, index, a)
	}
	return chunk(`{"tool_calls":[`+tc+`]}`, "null")
}

// sse streams the chunks as data: lines and ends with data: [DONE].
func sse(chunks ...string) http.HandlerFunc { return openaitest.Stream(chunks...) }

// sseRaw streams body exactly as given.
func sseRaw(body string) http.HandlerFunc { return openaitest.Raw(body) }

func jsonReply(status int, body string, headers ...string) http.HandlerFunc {
	return openaitest.JSON(status, body, headers...)
}

// toJSON re-encodes v so that expectations compare as decoded JSON.
func toJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad expectation %s: %v", s, err)
	}
	return v
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
