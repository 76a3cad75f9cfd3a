package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
// reader (CreateChatCompletionStream and Recv), for comparison. Run with
// -count=N and compare with benchstat, or see TestStreamRatio for the ratio
// measured in interleaved rounds.
func BenchmarkStream(b *testing.B) {
	adapter, plain, size := streamOps(b)
	for _, bc := range []struct {
		name string
		op   func(context.Context) error
	}{{"adapter", adapter}, {"go-openai", plain}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.op(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// streamOps returns one read of the benchmark response through the adapter
// and one through go-openai, and the response's size.
func streamOps(tb testing.TB) (adapter, plain func(context.Context) error, size int64) {
	body := benchStream()
	client := &http.Client{Transport: bytesTransport(body)}
	p, err := New(WithAPIKey("k"), WithModel("m"), WithBaseURL("http://127.0.0.1:1/v1"), WithHTTPClient(client))
	if err != nil {
		tb.Fatal(err)
	}
	req := userReq("go")
	adapter = func(ctx context.Context) error {
		var deltas, whole int
		for a, err := range p.Invoke(ctx, req) {
			if err != nil {
				return err
			}
			if _, ok := a.(artifact.Delta); ok {
				deltas++
			} else {
				whole++
			}
		}
		if deltas != benchChunks-3 || whole != 4 {
			return fmt.Errorf("%d deltas, %d artifacts", deltas, whole)
		}
		return nil
	}

	cfg := goopenai.DefaultConfig("k")
	cfg.BaseURL = "http://127.0.0.1:1/v1"
	cfg.HTTPClient = client
	c := goopenai.NewClientWithConfig(cfg)
	creq := goopenai.ChatCompletionRequest{
		Model:         "m",
		Messages:      []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "go"}},
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}
	plain = func(ctx context.Context) error {
		stream, err := c.CreateChatCompletionStream(ctx, creq)
		if err != nil {
			return err
		}
		defer stream.Close()
		n := 0
		for {
			_, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			n++
		}
		if n != benchChunks {
			return fmt.Errorf("%d chunks", n)
		}
		return nil
	}
	return adapter, plain, int64(len(body))
}

// envRatioRounds turns TestStreamRatio on: the number of rounds to run.
const envRatioRounds = "LODE_BENCH_RATIO_ROUNDS"

// TestStreamRatio measures the adapter's time per response over
// go-openai's in interleaved rounds, and logs the median ratio and its
// range. A round reads the response opsPerRound times through each,
// alternating one read of each (which goes first alternates too), so that
// a machine that slows down part-way slows both alike. It runs only when
// LODE_BENCH_RATIO_ROUNDS is set:
//
//	LODE_BENCH_RATIO_ROUNDS=21 go test -run TestStreamRatio -v ./x/provider/openai
func TestStreamRatio(t *testing.T) {
	const opsPerRound = 10
	rounds, _ := strconv.Atoi(os.Getenv(envRatioRounds))
	if rounds <= 0 {
		t.Skip("set " + envRatioRounds + " to the number of rounds to measure")
	}
	adapter, plain, _ := streamOps(t)
	timed := func(op func(context.Context) error) time.Duration {
		start := time.Now()
		if err := op(t.Context()); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	// Warm up both, then measure.
	timed(adapter)
	timed(plain)
	ratios := make([]float64, 0, rounds)
	for i := range rounds {
		var ta, tp time.Duration
		for j := range opsPerRound {
			if (i+j)%2 == 0 {
				ta += timed(adapter)
				tp += timed(plain)
			} else {
				tp += timed(plain)
				ta += timed(adapter)
			}
		}
		r := float64(ta) / float64(tp)
		ratios = append(ratios, r)
		t.Logf("round %2d: adapter %7.2f ms/op, go-openai %7.2f ms/op, ratio %.3f",
			i+1, float64(ta)/opsPerRound/1e6, float64(tp)/opsPerRound/1e6, r)
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	if len(ratios)%2 == 0 {
		median = (ratios[len(ratios)/2-1] + ratios[len(ratios)/2]) / 2
	}
	t.Logf("adapter / go-openai over %d interleaved rounds of %d reads each: median %.2f×, range %.2f×–%.2f×",
		rounds, opsPerRound, median, ratios[0], ratios[len(ratios)-1])
}

// BenchmarkWithModel writes the model name (and a zero temperature) into a
// request body of 1 MiB of history, what go-openai being given no model
// name costs each request (see buildRequest), beside go-openai's encoding
// of the same request.
func BenchmarkWithModel(b *testing.B) {
	p, err := New(WithModel("openai/gpt-5"), WithBaseURL("http://127.0.0.1:1/v1"))
	if err != nil {
		b.Fatal(err)
	}
	creq := goopenai.ChatCompletionRequest{Messages: []goopenai.ChatCompletionMessage{
		{Role: goopenai.ChatMessageRoleUser, Content: strings.Repeat("x", 1<<20)},
	}}
	body, _ := json.Marshal(creq)
	patch := []byte(`"temperature":0,`)
	b.Run("withModel", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.withModel(body, patch); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(creq); err != nil {
				b.Fatal(err)
			}
		}
	})
}
