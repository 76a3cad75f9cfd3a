package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/x/provider/script"
)

// TestHundredConcurrentStreams runs 100 turns at once, each on its own
// thread: every stream completes with finish, every thread is stored, and
// TestMain's goleak check finds nothing left behind.
func TestHundredConcurrentStreams(t *testing.T) {
	const n = 100
	steps := make([]script.Step, n)
	for i := range steps {
		steps[i] = script.Text(fmt.Sprintf("answer number %d, streamed in several deltas", i))
	}
	f := serve(t, script.New(steps, script.WithChunkSize(4)))
	type result struct {
		last string
		err  error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := f.srv.Client().Post(f.srv.URL+"/api/chat", "application/json", strings.NewReader(chatBody("", fmt.Sprint("question ", i))))
			if err != nil {
				results[i].err = err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				results[i].err = fmt.Errorf("status %d", resp.StatusCode)
				return
			}
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				results[i].err = err
				return
			}
			body := strings.TrimSuffix(string(raw), "data: [DONE]\n\n")
			frames := strings.Split(strings.TrimSpace(body), "\n\n")
			results[i].last = frames[len(frames)-1]
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil || r.last != `data: {"finishReason":"stop","type":"finish"}` {
			t.Errorf("stream %d: %v, last part %q", i, r.err, r.last)
		}
	}
	threads := 0
	for info, err := range f.store.List(context.Background()) {
		if err != nil || info.Turns != 2 {
			t.Errorf("thread %s: %d turns, %v", info.ID, info.Turns, err)
		}
		threads++
	}
	if threads != n {
		t.Errorf("%d threads stored, want %d", threads, n)
	}
}

// BenchmarkIdleStream measures the memory one open stream holds while its
// turn waits on the model: both sides of the connection, the handler's
// goroutines and the stream's queue. It reports bytes/stream.
func BenchmarkIdleStream(b *testing.B) {
	const n = 100
	var perStream float64
	for b.Loop() {
		g := newGate()
		f := serve(b, g, quiet())
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		resps := make([]*http.Response, n)
		for i := range n {
			resp, err := f.srv.Client().Post(f.srv.URL+"/api/chat", "application/json", strings.NewReader(chatBody("", "hi")))
			if err != nil {
				b.Fatal(err)
			}
			resps[i] = resp
			<-g.started
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		perStream = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
		close(g.release)
		for _, r := range resps {
			r.Body.Close()
		}
		f.h.Close()
	}
	b.ReportMetric(perStream, "bytes/stream")
}
