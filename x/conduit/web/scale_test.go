package web_test

import (
	"bufio"
	"context"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/conduit/web"
	xtool "github.com/lodeworks/lode/x/tool"
)

// held streams one delta, says so on started, and answers once release
// is closed: a turn waiting on its model, as most of an open stream's
// life is.
type held struct {
	started chan struct{}
	release chan struct{}
}

func (h held) Invoke(ctx context.Context, _ *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		if !yield(artifact.TextDelta{Content: "thinking "}, nil) {
			return
		}
		h.started <- struct{}{}
		select {
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		case <-h.release:
		}
		yield(artifact.Text{Content: "thinking done"}, nil)
	}
}

// The bounds TestScaleBounds holds, documented in docs/serving-at-scale.md.
// Both ends of each connection live in the test's process, so a stream's
// figures include the client's side (its connection's buffers and two
// transport goroutines), and -race's shadow memory is not counted by the
// runtime's heap figures.
const (
	// scaleHeapPerStream bounds the live heap one open stream holds:
	// about 30 KiB is measured (both ends, the turn, its queue).
	scaleHeapPerStream = 96 << 10
	// scaleGoroutinesPerStream bounds the goroutines one open stream
	// runs: 3 are measured, the server's connection (which runs the
	// handler and its turn) and the client's connection's two.
	scaleGoroutinesPerStream = 8
	// scaleHeapPerEnded bounds what an ended conversation leaves on the
	// live heap of a server that keeps its threads in a store: web keeps
	// nothing per conversation; about 2 KiB is measured, the descriptors
	// of ended goroutines the runtime keeps for reuse.
	scaleHeapPerEnded = 8 << 10
)

// TestScaleBounds opens 200 streams at once, each on a conversation of its
// own whose turn waits on the model, and holds their live heap and
// goroutines within a bound per stream; then lets every turn end, closes
// the clients' connections, and holds what the ended conversations leave:
// no goroutine and a bounded heap.
func TestScaleBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 200 streams")
	}
	const n = 200
	before := goleak.IgnoreCurrent()
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	prov := held{started: make(chan struct{}, n), release: make(chan struct{})}
	reg := registry(t)
	h, err := web.New(prov, store, quiet(), web.WithLoopOptions(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	transport := &http.Transport{MaxIdleConnsPerHost: n}
	client := &http.Client{Transport: transport}

	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	// Two collections: sync.Pool's caches (net/http's buffers) outlive
	// one.
	live := func() int64 {
		runtime.GC()
		runtime.GC()
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	// A first conversation warms what every request shares (the mux, the
	// store's folder, the HTTP client's and server's pools).
	warm := func(id string) {
		go func() { <-prov.started }()
		resp, err := client.Post(srv.URL+"/api/chat", "application/json", strings.NewReader(chatBody(id, "hi")))
		if err != nil {
			t.Fatal(err)
		}
		close(prov.release)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	warm("warm")
	prov.release = make(chan struct{})
	baseHeap, baseGoroutines := live(), runtime.NumGoroutine()

	bodies := make([]*bufio.Reader, n)
	resps := make([]*http.Response, n)
	for i := range n {
		resp, err := client.Post(srv.URL+"/api/chat", "application/json", strings.NewReader(chatBody("", "hello")))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: status %d", i, resp.StatusCode)
		}
		resps[i], bodies[i] = resp, bufio.NewReader(resp.Body)
		<-prov.started
	}
	openHeap, openGoroutines := live(), runtime.NumGoroutine()
	heapPer := (openHeap - baseHeap) / n
	goroutinesPer := float64(openGoroutines-baseGoroutines) / n
	t.Logf("%d open streams: %.1f KiB of live heap and %.1f goroutines per stream", n, float64(heapPer)/1024, goroutinesPer)
	if heapPer > scaleHeapPerStream {
		t.Errorf("an open stream holds %d bytes of live heap, over the bound %d", heapPer, scaleHeapPerStream)
	}
	if goroutinesPer > scaleGoroutinesPerStream {
		t.Errorf("an open stream runs %.1f goroutines, over the bound %d", goroutinesPer, scaleGoroutinesPerStream)
	}

	close(prov.release)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			b, err := io.ReadAll(bodies[i])
			resps[i].Body.Close()
			if err != nil || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
				t.Errorf("stream %d: %v, ending %q", i, err, b[max(0, len(b)-60):])
			}
		})
	}
	wg.Wait()
	transport.CloseIdleConnections()
	srv.CloseClientConnections()
	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	goleak.VerifyNone(t, before)
	endedPer := (live() - baseHeap) / n
	t.Logf("%d ended conversations: %d bytes of live heap each", n, endedPer)
	if endedPer > scaleHeapPerEnded {
		t.Errorf("an ended conversation leaves %d bytes of live heap, over the bound %d", endedPer, scaleHeapPerEnded)
	}
	threads := 0
	for info, err := range store.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if info.Turns == 2 {
			threads++
		}
	}
	if threads != n+1 {
		t.Errorf("%d threads stored with their answer, want %d", threads, n+1)
	}
}
