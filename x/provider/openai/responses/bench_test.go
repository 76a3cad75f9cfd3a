package responses

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/lodeworks/lode/artifact"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// benchEvents is about how many events one benchmarked stream has.
const benchEvents = 10000

// benchStream is a long answer as the API writes it: a reasoning summary,
// a message and a function call, each in many small deltas carrying the
// members real deltas carry (sequence numbers, item IDs, logprobs,
// obfuscation), between response objects as long as real ones.
func benchStream() []byte {
	resp := func(status, output, usage string) string {
		return `{` + respHead + `,"status":"` + status + `","background":false,"error":null,"incomplete_details":null,"instructions":null,` +
			`"max_output_tokens":null,"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":"thread-1",` +
			`"reasoning":{"effort":"medium","summary":"detailed"},"store":false,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"medium"},` +
			`"tool_choice":"auto","tools":[{"type":"function","name":"search","parameters":{"type":"object","properties":{"q":{"type":"string"}}},"strict":false}],` +
			`"top_p":1.0,"truncation":"disabled","output":` + output + `,"usage":` + usage + `,"metadata":{}}`
	}
	seq := 0
	ev := func(body string) string {
		seq++
		return fmt.Sprintf(`{"sequence_number":%d,%s}`, seq, body)
	}
	words := []string{"The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog. "}
	third := benchEvents / 3
	enc := strings.Repeat("gAAAAABq", 200)
	var summary, text, args strings.Builder
	evs := []string{
		ev(`"type":"response.created","response":` + resp("in_progress", "[]", "null")),
		ev(`"type":"response.in_progress","response":` + resp("in_progress", "[]", "null")),
		ev(`"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"` + enc + `","summary":[]}`),
		ev(`"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}`),
	}
	for i := range third {
		w := words[i%len(words)]
		summary.WriteString(w)
		evs = append(evs, ev(`"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"`+w+`","obfuscation":"Zx8k2"`))
	}
	reasoning := `{"id":"rs_1","type":"reasoning","encrypted_content":"` + enc + `","summary":[{"type":"summary_text","text":"` + summary.String() + `"}]}`
	evs = append(evs,
		ev(`"type":"response.reasoning_summary_text.done","item_id":"rs_1","output_index":0,"summary_index":0,"text":"`+summary.String()+`"`),
		ev(`"type":"response.output_item.done","output_index":0,"item":`+reasoning),
		ev(`"type":"response.output_item.added","output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}`),
		ev(`"type":"response.content_part.added","item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`))
	for i := range third {
		w := words[i%len(words)]
		text.WriteString(w)
		evs = append(evs, ev(`"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"`+w+`","logprobs":[],"obfuscation":"q9Lw"`))
	}
	message := `{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"` + text.String() + `"}],"role":"assistant"}`
	evs = append(evs,
		ev(`"type":"response.output_text.done","item_id":"msg_1","output_index":1,"content_index":0,"text":"`+text.String()+`","logprobs":[]`),
		ev(`"type":"response.output_item.done","output_index":1,"item":`+message),
		ev(`"type":"response.output_item.added","output_index":2,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"search"}`))
	for range third {
		args.WriteString(`\"q`)
		evs = append(evs, ev(`"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"\"q","obfuscation":"u2"`))
	}
	call := `{"id":"fc_1","type":"function_call","status":"completed","arguments":"` + args.String() + `","call_id":"call_1","name":"search"}`
	evs = append(evs,
		ev(`"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":2,"arguments":"`+args.String()+`"`),
		ev(`"type":"response.output_item.done","output_index":2,"item":`+call),
		ev(`"type":"response.completed","response":`+resp("completed", "["+reasoning+","+message+","+call+"]", usageJSON(50000, 10000))))
	return stream(evs...)
}

func benchAdapter(b *testing.B, body []byte) {
	p := memProvider(b, body)
	r := userReq("go")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for a, err := range p.Invoke(context.Background(), r) {
			if err != nil {
				b.Fatal(err)
			}
			if !artifact.IsDelta(a) {
				n++
			}
		}
		if n != 5 {
			b.Fatalf("%d artifacts", n)
		}
	}
}

// benchSDK reads the stream with go-openai alone: CreateResponseStream and
// Recv, which decodes every event into its ResponseStreamEvent.
func benchSDK(b *testing.B, body []byte) {
	cfg := goopenai.DefaultConfig("k")
	cfg.BaseURL = "http://127.0.0.1:1/v1"
	cfg.HTTPClient = providertest.StreamClient(body)
	cfg.EmptyMessagesLimit = streamEmptyLimit
	c := goopenai.NewClientWithConfig(cfg)
	req := goopenai.CreateResponseRequest{Model: "gpt-test", Input: "go"}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := c.CreateResponseStream(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			ev, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
			if ev.Type == goopenai.ResponseStreamEventCompleted {
				break
			}
		}
		s.Close()
		if n < benchEvents {
			b.Fatalf("%d events", n)
		}
	}
}

// BenchmarkStream reads the same long stream through the adapter (deltas
// and whole artifacts) and through go-openai's own stream decoding.
func BenchmarkStream(b *testing.B) {
	body := benchStream()
	b.Run("adapter", func(b *testing.B) { benchAdapter(b, body) })
	b.Run("go-openai", func(b *testing.B) { benchSDK(b, body) })
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
		fmt.Fprintf(&line, "round %d: adapter %s, go-openai %s, ratio %.3f\n", i+1, a.String()+" "+a.MemString(), s.String()+" "+s.MemString(), r)
	}
	slices.Sort(ratios)
	t.Logf("%s%d events, %d bytes: adapter/go-openai median %.3f, range %.3f–%.3f",
		line.String(), benchEvents, len(body), ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1])
}

// TestBenchStreamIsWhole checks the benchmark's stream is a real answer.
func TestBenchStreamIsWhole(t *testing.T) {
	_, arts, err := providertest.CollectContext(t.Context(), memProvider(t, benchStream()), userReq("go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 5 || arts[4] != (artifact.Finish{Reason: "tool_calls"}) || !strings.HasPrefix(arts[1].(artifact.Text).Content, "The quick") {
		t.Fatalf("artifacts = %.300v", arts)
	}
}
