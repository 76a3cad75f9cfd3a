package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/x/cassette"
	"github.com/lodeworks/lode/x/provider/openai"
)

// TestEmbedReplay runs the program on a recorded session: no model, no
// key, no network. LODE_RECORD=1 records testdata/embed.yaml again, here
// from fakeModel; pointed at a real model (drop the options but the
// client), it records a real session.
func TestEmbedReplay(t *testing.T) {
	client := cassette.ForTest(t, "testdata/embed.yaml", cassette.WithTransport(&fakeModel{}))
	var out strings.Builder
	err := run(t.Context(), &out, openai.WithModel("gpt-4o-mini"), openai.WithBaseURL("http://openai.test/v1"),
		openai.WithAPIKey("sk-test"), openai.WithHTTPClient(client))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "2 + 40 = 42.\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// fakeModel answers as a chat-completions server would: a call of add,
// then the answer.
type fakeModel struct {
	mu sync.Mutex
	n  int
}

func chunk(delta, finish string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1718000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
}

func (f *fakeModel) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	events := []string{
		chunk(`{"role":"assistant","content":"2 + 40 = "}`, "null"),
		chunk(`{"content":"42."}`, "null"),
		chunk(`{}`, `"stop"`),
	}
	if n == 1 {
		events = []string{
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"add","arguments":""}}]}`, "null"),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":2,\"b\":40}"}}]}`, "null"),
			chunk(`{}`, `"tool_calls"`),
		}
	}
	w := httptest.NewRecorder()
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range append(events, "[DONE]") {
		fmt.Fprintf(w, "data: %s\n\n", e)
	}
	return w.Result(), nil
}
