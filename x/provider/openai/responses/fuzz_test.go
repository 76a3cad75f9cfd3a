package responses

import (
	"errors"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

func memProvider(tb testing.TB, body []byte, opts ...Option) *Provider {
	tb.Helper()
	p, err := New(append([]Option{WithAPIKey("k"), WithModel("gpt-test"), WithBaseURL("http://127.0.0.1:1/v1"),
		WithHTTPClient(providertest.StreamClient(body)), WithEnv(func(string) string { return "" }), WithMaxRetries(0)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func stream(events ...string) []byte {
	var b strings.Builder
	for _, e := range events {
		b.WriteString(event(e))
	}
	return []byte(b.String())
}

// FuzzStream feeds any bytes to the stream reader. Whatever comes, the
// invocation ends with a whole answer closed by Finish, or with a typed
// error; every tool call in the answer was announced by a delta first, and
// Finish says "tool_calls" for an answer with calls, never "stop".
func FuzzStream(f *testing.F) {
	f.Add(stream(textAnswer("hello", " world")...))
	f.Add(stream(reasonedCalls()...))
	f.Add(stream(searchedCalls(searchCall, searchOutput, callItem(2, "call_inv", "crm__send_invoice", `{"id":"42"}`))...))
	f.Add(stream(created(), `{"type":"error","code":"server_error","message":"x"}`))
	f.Add(stream(created(), added(0, messageItem(0, "")), textDelta(0, "cut"), done(0, messageItem(0, "cut")),
		completed("incomplete", `,"incomplete_details":{"reason":"max_output_tokens"}`)))
	f.Add([]byte("event: response.created\ndata: {\n\n"))
	f.Add([]byte(": keep-alive\n\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n"))
	f.Add([]byte("data: {\"error\":{\"message\":\"boom\"}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		p := memProvider(t, body)
		var deltas, arts []artifact.Artifact
		var err error
		for a, e := range p.Invoke(t.Context(), userReq("x")) {
			if e != nil {
				err = e
				break
			}
			if artifact.IsDelta(a) {
				deltas = append(deltas, a)
			} else {
				arts = append(arts, a)
			}
		}
		if err != nil {
			var re *ResponseError
			var ae *APIError
			if !errors.As(err, &re) && !errors.As(err, &ae) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if len(arts) == 0 {
			t.Fatal("a whole answer without a Finish")
		}
		if _, ok := arts[len(arts)-1].(artifact.Finish); !ok {
			t.Fatalf("a whole answer that does not end in Finish: %#v", arts)
		}
		// Every call was announced by a delta at its index, before it.
		announced := map[int]bool{}
		for _, d := range deltas {
			if c, ok := d.(artifact.ToolCallDelta); ok {
				announced[c.Index] = true
			}
		}
		calls := 0
		for _, a := range arts {
			if c, ok := a.(artifact.ToolCall); ok {
				if !announced[calls] || c.ID == "" || c.Name == "" {
					t.Fatalf("call %d %#v: announced %v", calls, c, announced[calls])
				}
				calls++
			}
		}
		switch fin := arts[len(arts)-1].(artifact.Finish); {
		case fin.Reason == "tool_calls" && calls == 0, fin.Reason == "stop" && calls > 0:
			t.Fatalf("%d calls end with %q", calls, fin.Reason)
		}
	})
}
