package web

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// slowWriter is a ResponseWriter that takes one Write per token.
type slowWriter struct {
	tokens chan struct{}
	fail   error // returned by every Write when set
	mu     sync.Mutex
	body   bytes.Buffer
	hdr    http.Header
}

func (w *slowWriter) Header() http.Header { return w.hdr }
func (w *slowWriter) WriteHeader(int)     {}
func (w *slowWriter) Flush()              {}
func (w *slowWriter) Write(b []byte) (int, error) {
	if w.fail != nil {
		return 0, w.fail
	}
	<-w.tokens
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(b)
}

// TestStreamQueueBound sends deltas to a browser that takes one write per
// token: the queue never holds more than its bound of parts or bytes, the
// sender waits instead, and every part arrives, in order, then [DONE].
func TestStreamQueueBound(t *testing.T) {
	cases := []struct {
		name             string
		maxParts, maxLen int
		delta            string
	}{
		{name: "parts", maxParts: 4, maxLen: 1 << 20, delta: "x"},
		{name: "bytes", maxParts: 1000, maxLen: 200, delta: strings.Repeat("y", 50)},
		{name: "a part larger than the bound", maxParts: 1000, maxLen: 10, delta: "z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const n = 200
			s := newStream(c.maxParts, c.maxLen, 1<<30, "m1", "t1", nil)
			var mu sync.Mutex
			maxParts, maxBytes, over := 0, 0, 0
			full := make(chan struct{})
			var once sync.Once
			s.onQueue = func(parts, bytes int) {
				mu.Lock()
				defer mu.Unlock()
				maxParts, maxBytes = max(maxParts, parts), max(maxBytes, bytes)
				if bytes > c.maxLen && parts > 1 {
					over++
				}
			}
			// The writer takes nothing until a send has had to wait.
			s.onWait = func() { once.Do(func() { close(full) }) }
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				for range n {
					s.Emit(context.Background(), loop.DeltaEvent{Delta: artifact.TextDelta{Content: c.delta}})
				}
				s.end(nil, nil)
			}()
			w := &slowWriter{tokens: make(chan struct{}), hdr: http.Header{}}
			pumped := make(chan error, 1)
			go func() { pumped <- s.pump(context.Background(), w, time.Minute) }()
			<-full
			close(w.tokens)
			if err := <-pumped; err != nil {
				t.Fatalf("pump = %v", err)
			}
			<-sent
			mu.Lock()
			defer mu.Unlock()
			// Over the byte bound only as a single part.
			if maxParts > c.maxParts || over > 0 {
				t.Errorf("the queue held up to %d parts and %d bytes, %d times over the byte bound with more than one part; want at most %d parts, %d bytes", maxParts, maxBytes, over, c.maxParts, c.maxLen)
			}
			body := w.body.String()
			if got := strings.Count(body, `"type":"text-delta"`); got != n {
				t.Errorf("%d text-delta parts written, want %d", got, n)
			}
			if !strings.HasPrefix(body, `data: {"messageId":"m1"`) || !strings.HasSuffix(body, `data: {"finishReason":"stop","type":"finish"}`+"\n\ndata: [DONE]\n\n") {
				t.Errorf("the stream does not run from start to finish and [DONE]:\n%.200s ... %s", body, body[max(0, len(body)-120):])
			}
		})
	}
}

// TestStreamAbandoned: when a write fails, pump returns its error, and a
// sender waiting on the full queue goes on, its parts dropped.
func TestStreamAbandoned(t *testing.T) {
	broken := errors.New("broken pipe")
	s := newStream(2, 1<<20, 1<<30, "m1", "t1", nil)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for range 100 {
			s.Emit(context.Background(), loop.DeltaEvent{Delta: artifact.TextDelta{Content: "x"}})
		}
		s.end(nil, nil)
	}()
	w := &slowWriter{fail: broken, hdr: http.Header{}}
	if err := s.pump(context.Background(), w, time.Minute); !errors.Is(err, broken) {
		t.Fatalf("pump = %v, want the write's error", err)
	}
	<-sent
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) != 0 || s.parts != 0 || !s.gone {
		t.Errorf("after abandon: %d parts queued, %d counted, gone=%v", len(s.queue), s.parts, s.gone)
	}
}

// TestStreamBrowserLeft: the request's context ends while nothing is
// queued; pump returns its cause and abandons the stream.
func TestStreamBrowserLeft(t *testing.T) {
	s := newStream(2, 1<<20, 1<<30, "m1", "t1", nil)
	w := &slowWriter{tokens: make(chan struct{}), hdr: http.Header{}}
	close(w.tokens)
	ctx, cancel := context.WithCancelCause(context.Background())
	left := errors.New("left")
	pumped := make(chan error, 1)
	go func() { pumped <- s.pump(ctx, w, time.Minute) }()
	cancel(left)
	if err := <-pumped; !errors.Is(err, left) {
		t.Fatalf("pump = %v, want the context's cause", err)
	}
	// A stream nobody reads takes every part without waiting.
	for range 100 {
		s.Emit(context.Background(), loop.DeltaEvent{Delta: artifact.TextDelta{Content: "x"}})
	}
	s.end(nil, nil)
}

// logged is what s logged, each frame's JSON without its SSE framing.
func logged(s *stream) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.log))
	for i, f := range s.log {
		out[i] = strings.TrimSuffix(strings.TrimPrefix(string(f), "data: "), "\n\n")
	}
	return out
}

// TestStreamUsage: an answer's usage is sent as the message's metadata,
// the message's total each time it grows, with a call made outside the
// thread (UsageEvent) counted too; a usage of no tokens, or none at all,
// sends no metadata; a continued message goes on from its stored total.
func TestStreamUsage(t *testing.T) {
	const (
		start    = `{"messageId":"m1","messageMetadata":{"threadId":"t1"},"type":"start"}`
		step     = `{"type":"start-step"}`
		textHi   = `{"id":"text-1","type":"text-start"}|{"delta":"hi","id":"text-1","type":"text-delta"}|{"id":"text-1","type":"text-end"}`
		stepEnd  = `{"type":"finish-step"}`
		finish   = `{"finishReason":"stop","type":"finish"}`
		done     = `[DONE]`
		dataZero = `{"data":{"cachedInputTokens":0,"inputTokens":0,"outputTokens":0,"reasoningTokens":0},"transient":true,"type":"data-usage"}`
	)
	priced := artifact.Usage{InputTokens: 1200, CachedInputTokens: 200, OutputTokens: 34, ReasoningTokens: 5, Model: "m-1", CostUSD: 0.5, Priced: true}
	pricedData := `{"data":{"cachedInputTokens":200,"inputTokens":1200,"outputTokens":34,"reasoningTokens":5},"transient":true,"type":"data-usage"}`
	answer := func(u ...artifact.Artifact) loop.Event {
		return loop.TurnCompleteEvent{Role: ledger.RoleAssistant, Artifacts: append([]artifact.Artifact{artifact.Text{Content: "hi"}}, u...)}
	}
	summary := loop.UsageEvent{For: "history summary", Usage: artifact.Usage{InputTokens: 100, OutputTokens: 10, Model: "m-1", CostUSD: 0.25, Priced: true}}
	storedPrior := &uiMessage{ID: "m1", Role: "assistant", Parts: []uiPart{{Type: "step-start"}, {Type: "text", Text: "before", State: "done"}},
		Metadata: &uiMetadata{Usage: &uiUsage{InputTokens: 50, OutputTokens: 5, CostUSD: 0.25}}}
	cases := []struct {
		name   string
		prior  *uiMessage
		events []loop.Event
		want   []string
	}{
		{name: "priced", events: []loop.Event{answer(priced)}, want: []string{start, step, textHi, pricedData,
			`{"messageMetadata":{"usage":{"inputTokens":1200,"cachedInputTokens":200,"outputTokens":34,"reasoningTokens":5,"costUSD":0.5}},"type":"message-metadata"}`,
			stepEnd, finish, done}},
		{name: "unpriced", events: []loop.Event{answer(artifact.Usage{InputTokens: 10, OutputTokens: 2, Model: "mystery-1"})}, want: []string{start, step, textHi,
			`{"data":{"cachedInputTokens":0,"inputTokens":10,"outputTokens":2,"reasoningTokens":0},"transient":true,"type":"data-usage"}`,
			`{"messageMetadata":{"usage":{"inputTokens":10,"cachedInputTokens":0,"outputTokens":2,"reasoningTokens":0,"costUSD":0,"unpriced":"mystery-1"}},"type":"message-metadata"}`,
			stepEnd, finish, done}},
		{name: "unpriced with no model named", events: []loop.Event{answer(artifact.Usage{InputTokens: 1})}, want: []string{start, step, textHi,
			`{"data":{"cachedInputTokens":0,"inputTokens":1,"outputTokens":0,"reasoningTokens":0},"transient":true,"type":"data-usage"}`,
			`{"messageMetadata":{"usage":{"inputTokens":1,"cachedInputTokens":0,"outputTokens":0,"reasoningTokens":0,"costUSD":0,"unpriced":"the model"}},"type":"message-metadata"}`,
			stepEnd, finish, done}},
		{name: "zero tokens", events: []loop.Event{answer(artifact.Usage{Model: "m-1", Priced: true}), loop.UsageEvent{Usage: artifact.Usage{Model: "m-1"}}},
			want: []string{start, step, textHi, dataZero, stepEnd, finish, done}},
		{name: "no usage", events: []loop.Event{answer()}, want: []string{start, step, textHi, stepEnd, finish, done}},
		{name: "a summary before the answer", events: []loop.Event{summary, answer(priced)}, want: []string{start,
			`{"messageMetadata":{"usage":{"inputTokens":100,"cachedInputTokens":0,"outputTokens":10,"reasoningTokens":0,"costUSD":0.25}},"type":"message-metadata"}`,
			step, textHi, pricedData,
			`{"messageMetadata":{"usage":{"inputTokens":1300,"cachedInputTokens":200,"outputTokens":44,"reasoningTokens":5,"costUSD":0.75}},"type":"message-metadata"}`,
			stepEnd, finish, done}},
		{name: "a continued message", prior: storedPrior, events: []loop.Event{answer(priced)}, want: []string{start,
			`{"messageMetadata":{"usage":{"inputTokens":50,"cachedInputTokens":0,"outputTokens":5,"reasoningTokens":0,"costUSD":0.25}},"type":"message-metadata"}`,
			step, `{"id":"stored-1","type":"text-start"}|{"delta":"before","id":"stored-1","type":"text-delta"}|{"id":"stored-1","type":"text-end"}`, stepEnd,
			step, textHi, pricedData,
			`{"messageMetadata":{"usage":{"inputTokens":1250,"cachedInputTokens":200,"outputTokens":39,"reasoningTokens":5,"costUSD":0.75}},"type":"message-metadata"}`,
			stepEnd, finish, done}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStream(1000, 1<<20, 1<<20, "m1", "t1", c.prior)
			s.abandon() // no writer: every part is only logged
			for _, ev := range c.events {
				s.Emit(context.Background(), ev)
			}
			s.end(nil, nil)
			want := strings.Split(strings.Join(c.want, "|"), "|")
			if got := logged(s); !slices.Equal(got, want) {
				t.Errorf("parts:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
			}
		})
	}
}
