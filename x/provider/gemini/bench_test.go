package gemini

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// benchChunks is how many chunks one benchmarked stream has.
const benchChunks = 5000

// benchStream is a long answer as the API streams it: thought summaries,
// then text, each chunk with the usage so far and the response's ID, and a
// final chunk with two signed calls and the finish reason.
func benchStream() []byte {
	words := []string{"The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog. "}
	var chunks []string
	for i := range benchChunks {
		thought := ""
		if i < benchChunks/4 {
			thought = `,"thought":true`
		}
		w := strings.Repeat(words[i%len(words)], 3)
		chunks = append(chunks, fmt.Sprintf(`{"candidates":[{"content":{"parts":[{"text":%q%s}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":1200,"candidatesTokenCount":%d,"thoughtsTokenCount":300,"cachedContentTokenCount":1000,"totalTokenCount":%d},"modelVersion":"gemini-2.5-flash","responseId":"AbCdEfGhIjKlMnOp"}`, w, thought, i, 1500+i))
	}
	sig := strings.Repeat("Q2xhdWRl", 60)
	chunks = append(chunks, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"search","args":{"q":"fox","n":3}},"thoughtSignature":"`+sig+`"},{"functionCall":{"name":"search","args":{"q":"dog"}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1200,"candidatesTokenCount":5000,"thoughtsTokenCount":300,"cachedContentTokenCount":1000,"totalTokenCount":6500},"modelVersion":"gemini-2.5-flash","responseId":"AbCdEfGhIjKlMnOp"}`)
	return []byte(sse(chunks...))
}

type roundTripFunc = providertest.RoundTripFunc

// bytesClient answers every request with the same stream, in memory.
func bytesClient(body []byte) *http.Client {
	return providertest.BytesClient("text/event-stream", body)
}

func benchAdapter(b *testing.B, body []byte) {
	p, err := New(WithAPIKey("k"), WithModel("gemini-2.5-flash"), WithBaseURL("http://127.0.0.1:1"),
		WithHTTPClient(bytesClient(body)), WithEnv(func(string) string { return "" }))
	if err != nil {
		b.Fatal(err)
	}
	r := userText("go")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var whole []artifact.Artifact
		for a, err := range p.Invoke(context.Background(), r) {
			if err != nil {
				b.Fatal(err)
			}
			if !artifact.IsDelta(a) {
				whole = append(whole, a)
			}
		}
		if len(whole) != 7 {
			b.Fatalf("%d artifacts", len(whole))
		}
	}
}

// benchSDK reads the stream with the SDK's own decoder, taking each
// chunk's parts as they come: no assembly beyond what the SDK does.
func benchSDK(b *testing.B, body []byte) {
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPClient: bytesClient(body),
		HTTPOptions: genai.HTTPOptions{BaseURL: "http://127.0.0.1:1/"},
	})
	if err != nil {
		b.Fatal(err)
	}
	off := false
	cfg := &genai.GenerateContentConfig{AutomaticContinuation: &off}
	contents := []*genai.Content{genai.NewContentFromText("go", genai.RoleUser)}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		parts := 0
		for resp, err := range c.Models.GenerateContentStream(context.Background(), "gemini-2.5-flash", contents, cfg) {
			if err != nil {
				b.Fatal(err)
			}
			parts += len(resp.Candidates[0].Content.Parts)
		}
		if parts != benchChunks+2 {
			b.Fatalf("%d parts", parts)
		}
	}
}

// BenchmarkStream reads the same long stream through the adapter (deltas
// and whole artifacts) and through the SDK's stream decoder.
func BenchmarkStream(b *testing.B) {
	body := benchStream()
	b.Run("adapter", func(b *testing.B) { benchAdapter(b, body) })
	b.Run("sdk", func(b *testing.B) { benchSDK(b, body) })
}

// TestStreamRatio runs the two halves of BenchmarkStream in interleaved
// rounds, so that both see the same machine load, and logs the median and
// range of adapter/SDK time. It measures, never asserts: set
// LODE_BENCH_ROUNDS to a number of rounds to run it.
func TestStreamRatio(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("LODE_BENCH_ROUNDS"))
	if rounds <= 0 {
		t.Skip("set LODE_BENCH_ROUNDS to measure")
	}
	body := benchStream()
	var ratios []float64
	var line strings.Builder
	for i := range rounds {
		var a, s testing.BenchmarkResult
		if i%2 == 0 {
			a = testing.Benchmark(func(b *testing.B) { benchAdapter(b, body) })
			s = testing.Benchmark(func(b *testing.B) { benchSDK(b, body) })
		} else {
			s = testing.Benchmark(func(b *testing.B) { benchSDK(b, body) })
			a = testing.Benchmark(func(b *testing.B) { benchAdapter(b, body) })
		}
		r := float64(a.NsPerOp()) / float64(s.NsPerOp())
		ratios = append(ratios, r)
		fmt.Fprintf(&line, "round %d: adapter %s, sdk %s, ratio %.3f\n", i+1, a.String()+" "+a.MemString(), s.String()+" "+s.MemString(), r)
	}
	slices.Sort(ratios)
	t.Logf("%s%d chunks, %d bytes: adapter/sdk median %.3f, range %.3f–%.3f",
		line.String(), benchChunks+1, len(body), ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
}
