package cassette_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/cassette"
)

// TestScrubSplitAcrossEvents: a model that repeats a key in small deltas
// leaves no piece of it in the cassette, for each wire's stream; a client
// joining the replayed deltas reads REDACTED where the key was and the
// rest of the answer as it came.
func TestScrubSplitAcrossEvents(t *testing.T) {
	const key = "sk-proj-split-across-deltas-0123456789abcdef"
	answer := "your key is " + key + ", keep it safe"
	chunks := func(n int) []string {
		var out []string
		for s := answer; s != ""; {
			k := min(n, len(s))
			out, s = append(out, s[:k]), s[k:]
		}
		return out
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	wires := []struct {
		name  string
		ctype string
		event func(i int, s string) string
		// join reads the answer back as a client does.
		join func(body string) string
	}{
		{"openai chat", "text/event-stream",
			func(i int, s string) string {
				return fmt.Sprintf(`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%s}}]}`+"\n\n", q(s))
			},
			joinSSE(func(m map[string]any) string {
				return dig(m, "choices", 0, "delta", "content")
			})},
		{"anthropic", "text/event-stream",
			func(i int, s string) string {
				return fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%s}}\n\n", q(s))
			},
			joinSSE(func(m map[string]any) string { return dig(m, "delta", "text") })},
		{"responses", "text/event-stream",
			func(i int, s string) string {
				return fmt.Sprintf("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"delta\":%s}\n\n", i, q(s))
			},
			joinSSE(func(m map[string]any) string { return dig(m, "delta") })},
		{"gemini sse", "text/event-stream",
			func(i int, s string) string {
				return fmt.Sprintf(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":%s}]}}]}`+"\r\n\r\n", q(s))
			},
			joinSSE(func(m map[string]any) string { return dig(m, "candidates", 0, "content", "parts", 0, "text") })},
		{"gemini json array", "application/json",
			func(i int, s string) string {
				sep := ","
				if i == 0 {
					sep = "["
				}
				return fmt.Sprintf(`%s{"candidates":[{"content":{"role":"model","parts":[{"text":%s}]}}]}`+"\r\n", sep, q(s))
			},
			func(body string) string {
				var events []map[string]any
				_ = json.Unmarshal([]byte(strings.TrimSuffix(body, "]")+"]"), &events)
				var b strings.Builder
				for _, m := range events {
					b.WriteString(dig(m, "candidates", 0, "content", "parts", 0, "text"))
				}
				return b.String()
			}},
	}
	for _, w := range wires {
		for _, size := range []int{1, 7, 16} {
			t.Run(fmt.Sprintf("%s/%d-byte deltas", w.name, size), func(t *testing.T) {
				var reply strings.Builder
				for i, c := range chunks(size) {
					reply.WriteString(w.event(i, c))
				}
				xs := []exchange{{method: "POST", path: "/v1/stream", header: map[string]string{"Authorization": "Bearer " + key},
					body: `{"stream":true}`, status: 200, ctype: w.ctype, reply: reply.String()}}
				if got := w.join(reply.String()); got != answer {
					t.Fatalf("the test's own join reads %q", got)
				}
				srv := scripted(t, xs)
				path := filepath.Join(t.TempDir(), "c.yaml")
				rec, err := cassette.New(path, cassette.WithMode(cassette.Record))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := send(t, rec.Client(), srv.URL, xs); err != nil {
					t.Fatal(err)
				}
				if err := rec.Stop(); err != nil {
					t.Fatal(err)
				}
				srv.Close()
				rep, err := cassette.New(path)
				if err != nil {
					t.Fatal(err)
				}
				defer rep.Stop()
				got, err := send(t, rep.Client(), srv.URL, xs)
				if err != nil {
					t.Fatalf("replay: %v", err)
				}
				if joined := w.join(got[0]); joined != "your key is "+cassette.Redacted+", keep it safe" {
					t.Errorf("replayed answer %q", joined)
				}
				data, _ := os.ReadFile(path)
				if strings.Contains(strings.ReplaceAll(string(data), `\"`, ""), key[len(key)-12:]) {
					t.Errorf("the cassette holds the key's tail:\n%s", data)
				}
			})
		}
	}
}

// TestScrubSplitLeavesOtherStreamsAlone: a stream without a known secret
// is kept byte for byte, and one whose secret sits whole in one event is
// redacted there only.
func TestScrubSplitLeavesOtherStreamsAlone(t *testing.T) {
	const key = "sk-whole-in-one-event-0001"
	plain := "data: {\"choices\":[{\"delta\":{\"content\":\"sk-\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"nothing\\u003c\"}}]}\n\ndata: [DONE]\n\n"
	whole := "data: {\"choices\":[{\"delta\":{\"content\":\"a " + key + "\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\" b\"}}]}\n\n"
	for _, c := range []struct{ reply, want string }{
		{plain, plain},
		{whole, strings.Replace(whole, key, cassette.Redacted, 1)},
	} {
		xs := []exchange{{method: "POST", path: "/v1/stream", header: map[string]string{"Authorization": "Bearer " + key},
			body: `{}`, status: 200, ctype: "text/event-stream", reply: c.reply}}
		srv := scripted(t, xs)
		path := filepath.Join(t.TempDir(), "c.yaml")
		rec, err := cassette.New(path, cassette.WithMode(cassette.Record))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := send(t, rec.Client(), srv.URL, xs); err != nil {
			t.Fatal(err)
		}
		if err := rec.Stop(); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		rep, err := cassette.New(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := send(t, rep.Client(), srv.URL, xs)
		rep.Stop()
		if err != nil || got[0] != c.want {
			t.Errorf("replayed %q (%v), want %q", got, err, c.want)
		}
	}
}

// joinSSE joins what text returns of each data: event's JSON.
func joinSSE(text func(map[string]any) string) func(string) string {
	return func(body string) string {
		var b strings.Builder
		for _, line := range strings.Split(body, "\n") {
			data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: ")
			if !ok {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) == nil {
				b.WriteString(text(m))
			}
		}
		return b.String()
	}
}

// dig follows keys and indexes into decoded JSON; "" when the path is not
// there.
func dig(v any, path ...any) string {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return ""
			}
			v = a[k]
		}
	}
	s, _ := v.(string)
	return s
}
