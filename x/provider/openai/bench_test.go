package openai

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/lodeworks/lode/artifact"
)

// benchChunks is how many chunks one benchmarked response has.
const benchChunks = 10000

// benchStream is a streamed answer of benchChunks chunks: a role chunk,
// text deltas with a run of tool-call fragments in the middle, a finish
// chunk and a usage chunk.
func benchStream() []byte {
	var b strings.Builder
	write := func(c string) { b.WriteString("data: " + c + "\n\n") }
	write(roleChunk())
	words := []string{"The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog. "}
	n := 1
	for ; n < benchChunks/2; n++ {
		write(textChunk(words[n%len(words)]))
	}
	write(toolChunk(0, "call_1", "search", ""))
	n++
	for ; n < benchChunks-2; n++ {
		write(toolChunk(0, "", "", `"q`))
	}
	write(finishChunk("tool_calls"))
	write(usageChunk(1000, benchChunks))
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// bytesTransport answers every request with the same bytes, in memory.
func bytesTransport(body []byte) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		return &http.Response{
			StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:  http.Header{"Content-Type": {"text/event-stream"}},
			Body:    io.NopCloser(bytes.NewReader(body)),
			Request: r,
		}, nil
	})
}

// BenchmarkStream reads the same 10,000-chunk response through the adapter
// (into deltas and whole artifacts) and through go-openai's own stream
// reader (CreateChatCompletionStream and Recv), for comparison.
func BenchmarkStream(b *testing.B) {
	body := benchStream()
	client := &http.Client{Transport: bytesTransport(body)}

	b.Run("adapter", func(b *testing.B) {
		p, err := New(WithAPIKey("k"), WithModel("m"), WithBaseURL("http://127.0.0.1:1/v1"), WithHTTPClient(client))
		if err != nil {
			b.Fatal(err)
		}
		req := userReq("go")
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var deltas, whole int
			for a, err := range p.Invoke(b.Context(), req) {
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := a.(artifact.Delta); ok {
					deltas++
				} else {
					whole++
				}
			}
			if deltas != benchChunks-3 || whole != 4 {
				b.Fatalf("%d deltas, %d artifacts", deltas, whole)
			}
		}
	})

	b.Run("go-openai", func(b *testing.B) {
		cfg := goopenai.DefaultConfig("k")
		cfg.BaseURL = "http://127.0.0.1:1/v1"
		cfg.HTTPClient = client
		c := goopenai.NewClientWithConfig(cfg)
		req := goopenai.ChatCompletionRequest{
			Model:         "m",
			Messages:      []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "go"}},
			StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
		}
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			stream, err := c.CreateChatCompletionStream(b.Context(), req)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for {
				_, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			stream.Close()
			if n != benchChunks {
				b.Fatalf("%d chunks", n)
			}
		}
	})
}
