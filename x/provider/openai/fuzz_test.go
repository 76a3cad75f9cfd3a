package openai

import (
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// pieceBody hands out data in pieces whose sizes cycle through sizes, so a
// line, a JSON value or a UTF-8 sequence may be cut anywhere.
type pieceBody struct {
	data  []byte
	sizes []byte
	i     int
}

func (b *pieceBody) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		return 0, io.EOF
	}
	n := len(b.data)
	if len(b.sizes) > 0 {
		n = int(b.sizes[b.i%len(b.sizes)])%64 + 1
		b.i++
	}
	n = min(n, len(p), len(b.data))
	copy(p, b.data[:n])
	b.data = b.data[n:]
	return n, nil
}

func (b *pieceBody) Close() error { return nil }

// memProvider is a Provider whose every request is answered with body, in
// pieces; nothing leaves the process.
func memProvider(tb testing.TB, body, sizes []byte, opts ...Option) *Provider {
	tb.Helper()
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:  http.Header{"Content-Type": {"text/event-stream"}},
			Body:    &pieceBody{data: body, sizes: sizes},
			Request: r,
		}, nil
	})
	base := []Option{WithAPIKey("k"), WithModel("m"), WithBaseURL("http://127.0.0.1:1/v1"),
		WithHTTPClient(&http.Client{Transport: rt}), WithMaxRetries(0)}
	p, err := New(append(base, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func sseBody(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func FuzzStream(f *testing.F) {
	f.Add([]byte(sseBody(roleChunk(), textChunk("Hello, "), textChunk("wörld ✓"), finishChunk("stop"), usageChunk(3, 4))), []byte{})
	f.Add([]byte(sseBody(parallelCalls(`{"city":"Paris"}`)...)), []byte{1, 7, 3, 60})
	f.Add([]byte(sseBody(chunk(`{"reasoning_content":"hm"}`, "null"), toolChunk(0, "", "a", "{"), finishChunk("tool_calls"))), []byte{2})
	f.Add([]byte(sseBody(kimiChunk(`{"reasoning_content":"a","reasoning_details":[{"type":"reasoning.text","text":"a","index":0}]}`, "null"),
		kimiChunk(`{"reasoning_content":"b","reasoning_details":[{"type":"reasoning.text","text":"b","index":0}]}`, "null"),
		toolChunk(0, "c", "a", "{}"), finishChunk("tool_calls"),
		wholeChunk(``, `{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"completion_tokens_details":{"reasoning_tokens":40}}`))), []byte{4, 9})
	f.Add([]byte("data: "+textChunk("a")+"\n\ndata: {\"error\":{\"message\":\"boom\"}}\n\n"), []byte{5})
	f.Add([]byte(": ping\r\n\r\ndata:\r\n\r\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"x\"}}]}}]}\n\n"), []byte{0})
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-5,\"id\":\"a\",\"function\":{\"name\":\"n\"}}]},\"finish_reason\":\"x\"}]}\n\ndata: [DONE]\n"), []byte{9, 1})
	f.Add([]byte("garbage\n\x00\xff{{{\n\ndata: [DONE"), []byte{3})

	f.Fuzz(func(t *testing.T, body, sizes []byte) {
		p := memProvider(t, body, sizes)
		var (
			deltaText, deltaReason strings.Builder
			deltaArgs              = map[int]*strings.Builder{}
			arts                   []artifact.Artifact
			err                    error
		)
		for a, e := range p.Invoke(t.Context(), userReq("go")) {
			if err != nil {
				t.Fatalf("yielded %v after the error %v", a, err)
			}
			if e != nil {
				err = e
				continue
			}
			switch d := a.(type) {
			case artifact.TextDelta:
				deltaText.WriteString(d.Content)
			case artifact.ReasoningDelta:
				deltaReason.WriteString(d.Content)
			case artifact.ToolCallDelta:
				if deltaArgs[d.Index] == nil {
					deltaArgs[d.Index] = &strings.Builder{}
				}
				deltaArgs[d.Index].WriteString(d.Arguments)
			}
			if artifact.IsDelta(a) && len(arts) > 0 {
				t.Fatalf("delta %#v after whole artifacts", a)
			}
			if !artifact.IsDelta(a) {
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
			t.Fatal("no artifacts and no error")
		}
		if fin, ok := arts[len(arts)-1].(artifact.Finish); !ok || fin.Reason == "" {
			t.Fatalf("last artifact %#v", arts[len(arts)-1])
		}
		var text, reason string
		var calls []artifact.ToolCall
		for _, a := range arts {
			switch a := a.(type) {
			case artifact.Text:
				text = a.Content
			case artifact.Reasoning:
				reason = a.Content
			case artifact.ToolCall:
				calls = append(calls, a)
			}
		}
		if text != deltaText.String() || reason != deltaReason.String() {
			t.Fatalf("text %q vs deltas %q; reasoning %q vs deltas %q", text, deltaText.String(), reason, deltaReason.String())
		}
		if len(calls) != len(deltaArgs) {
			t.Fatalf("%d calls from %d streamed", len(calls), len(deltaArgs))
		}
		// Calls come in index order, each with exactly the arguments
		// streamed under its index.
		indexes := slices.Sorted(maps.Keys(deltaArgs))
		ids := map[string]bool{}
		for i, c := range calls {
			if c.Name == "" || c.ID == "" || ids[c.ID] {
				t.Fatalf("bad call %#v", c)
			}
			ids[c.ID] = true
			if want := deltaArgs[indexes[i]].String(); c.Arguments != want {
				t.Fatalf("call %d arguments %q, streamed %q", i, c.Arguments, want)
			}
		}
	})
}
