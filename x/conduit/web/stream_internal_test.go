package web

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
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
