package anthropic

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// benchEvents is about how many events one benchmarked stream has.
const benchEvents = 10000

// benchStream is a long answer: a thinking block, a text block and a tool
// call, each streamed in many small deltas, with pings among them.
func benchStream() []byte {
	events := []string{msgStart(`{"input_tokens":1000,"cache_read_input_tokens":50000,"output_tokens":1}`),
		blockStart(0, `{"type":"thinking","thinking":"","signature":""}`)}
	words := []string{"The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog. "}
	third := benchEvents / 3
	for i := range third {
		events = append(events, blockDelta(0, `{"type":"thinking_delta","thinking":"`+words[i%len(words)]+`"}`))
	}
	events = append(events, blockDelta(0, `{"type":"signature_delta","signature":"`+strings.Repeat("Zm9v", 100)+`"}`), blockStop(0),
		blockStart(1, `{"type":"text","text":""}`))
	for i := range third {
		events = append(events, blockDelta(1, textDelta(words[i%len(words)])))
		if i%100 == 0 {
			events = append(events, ping)
		}
	}
	events = append(events, blockStop(1), blockStart(2, `{"type":"tool_use","id":"toolu_1","name":"search","input":{}}`))
	for range third {
		events = append(events, blockDelta(2, `{"type":"input_json_delta","partial_json":"\"q"}`))
	}
	events = append(events, blockStop(2), msgDelta("tool_use", `{"output_tokens":10000}`), msgStop)
	return []byte(sse(events...).body)
}

// benchSearchStream is a long answer of a web search: text, the server
// tool's use with its input streamed, ten results, then a text whose
// citations stream between its deltas.
func benchSearchStream() []byte {
	events := []string{msgStart(`{"input_tokens":1000,"output_tokens":1}`), blockStart(0, `{"type":"text","text":""}`)}
	words := []string{"The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog. "}
	for i := range benchEvents / 5 {
		events = append(events, blockDelta(0, textDelta(words[i%len(words)])))
	}
	events = append(events, blockStop(0), blockStart(1, `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}`))
	events = append(events, blockDelta(1, `{"type":"input_json_delta","partial_json":"{\"query\": \""}`))
	for range benchEvents / 10 {
		events = append(events, blockDelta(1, `{"type":"input_json_delta","partial_json":"fox "}`))
	}
	events = append(events, blockDelta(1, `{"type":"input_json_delta","partial_json":"\"}"}`))
	var results []string
	for i := range 10 {
		results = append(results, fmt.Sprintf(`{"type":"web_search_result","title":"Result %d","url":"https://example.invalid/%d","encrypted_content":"%s","page_age":null}`, i, i, strings.Repeat("RW5j", 500)))
	}
	events = append(events, blockStop(1),
		blockStart(2, `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[`+strings.Join(results, ",")+`]}`), blockStop(2),
		blockStart(3, `{"type":"text","text":"","citations":[]}`))
	for i := range benchEvents * 7 / 20 {
		events = append(events,
			blockDelta(3, fmt.Sprintf(`{"type":"citations_delta","citation":{"type":"web_search_result_location","cited_text":"fact %d","url":"https://example.invalid/%d","title":"Result %d","encrypted_index":"RW5jSW5k"}}`, i, i%10, i%10)),
			blockDelta(3, textDelta(words[i%len(words)])))
	}
	events = append(events, blockStop(3), msgDelta("end_turn", `{"output_tokens":10000}`), msgStop)
	return []byte(sse(events...).body)
}

// bytesClient answers every request with the same stream, in memory.
func bytesClient(body []byte) *http.Client {
	return providertest.BytesClient("text/event-stream", body)
}

func benchAdapter(b *testing.B, body []byte, artifacts int) {
	p, err := New(WithAPIKey("k"), WithModel("claude-sonnet-4-5"), WithBaseURL("http://127.0.0.1:1"),
		WithHTTPClient(bytesClient(body)), WithEnv(func(string) string { return "" }))
	if err != nil {
		b.Fatal(err)
	}
	r := req(userTurn("go"))
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
		if len(whole) != artifacts {
			b.Fatalf("%d artifacts", len(whole))
		}
	}
}

func benchSDK(b *testing.B, body []byte, blocks int) {
	c := sdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithAPIKey("k"), option.WithBaseURL("http://127.0.0.1:1/"),
		option.WithHTTPClient(bytesClient(body)), option.WithMaxRetries(0), option.WithOpenTelemetryTraces(false))
	params := sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("go"))}}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		stream := c.Messages.NewStreaming(context.Background(), params)
		var msg sdk.Message
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				b.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			b.Fatal(err)
		}
		stream.Close()
		if len(msg.Content) != blocks {
			b.Fatalf("%d blocks", len(msg.Content))
		}
	}
}

// BenchmarkStream reads the same long stream through the adapter (deltas
// and whole artifacts) and through the SDK's stream with its own
// accumulator, Message.Accumulate.
func BenchmarkStream(b *testing.B) {
	body := benchStream()
	b.Run("adapter", func(b *testing.B) { benchAdapter(b, body, 5) })
	b.Run("sdk-accumulate", func(b *testing.B) { benchSDK(b, body, 3) })
	search := benchSearchStream()
	b.Run("search/adapter", func(b *testing.B) { benchAdapter(b, search, 7) })
	b.Run("search/sdk-accumulate", func(b *testing.B) { benchSDK(b, search, 4) })
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
	for _, c := range []struct {
		name              string
		body              []byte
		artifacts, blocks int
	}{{"thinking, text, tool call", benchStream(), 5, 3}, {"web search, citations", benchSearchStream(), 7, 4}} {
		t.Run(c.name, func(t *testing.T) { streamRatio(t, rounds, c.body, c.artifacts, c.blocks) })
	}
}

func streamRatio(t *testing.T, rounds int, body []byte, artifacts, blocks int) {
	var ratios []float64
	var line strings.Builder
	for i := range rounds {
		var a, s testing.BenchmarkResult
		if i%2 == 0 {
			a = testing.Benchmark(func(b *testing.B) { benchAdapter(b, body, artifacts) })
			s = testing.Benchmark(func(b *testing.B) { benchSDK(b, body, blocks) })
		} else {
			s = testing.Benchmark(func(b *testing.B) { benchSDK(b, body, blocks) })
			a = testing.Benchmark(func(b *testing.B) { benchAdapter(b, body, artifacts) })
		}
		r := float64(a.NsPerOp()) / float64(s.NsPerOp())
		ratios = append(ratios, r)
		fmt.Fprintf(&line, "round %d: adapter %s, sdk %s, ratio %.3f\n", i+1, a.String()+" "+a.MemString(), s.String()+" "+s.MemString(), r)
	}
	slices.Sort(ratios)
	t.Logf("%s%d bytes: adapter/sdk median %.3f, range %.3f–%.3f",
		line.String(), len(body), ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
}
