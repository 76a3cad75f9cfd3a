package web_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/conduit/web"
)

// bigAnswer streams one shared answer in small text deltas, then the whole
// text, so that the provider itself holds nothing per request.
type bigAnswer struct {
	text  string
	chunk int
	// ended is set when a stream reaches its whole text, the end of its
	// turn, which the ledger then stores.
	ended *atomic.Bool
}

func newBigAnswer(size, chunk int) bigAnswer {
	return bigAnswer{text: strings.Repeat("lorem ipsum dolor sit amet, ", size/28+1)[:size], chunk: chunk, ended: new(atomic.Bool)}
}

func (b bigAnswer) Invoke(ctx context.Context, _ *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		for i := 0; i < len(b.text); i += b.chunk {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			if !yield(artifact.TextDelta{Content: b.text[i:min(i+b.chunk, len(b.text))]}, nil) {
				return
			}
		}
		b.ended.Store(true)
		yield(artifact.Text{Content: b.text}, nil)
	}
}

// smallBuffers keeps the kernel from taking a whole answer into socket
// buffers on the server's side, so that a client that reads nothing is
// felt by the handler's writes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(64 << 10)
	}
	return c, err
}

// boundFixture is a Handler on a loopback server with small socket
// buffers; served is closed when every ServeHTTP call has returned.
type boundFixture struct {
	h     *web.Handler
	srv   *httptest.Server
	store ledger.Store
	calls sync.WaitGroup
}

func serveBounded(t *testing.T, prov provider.Provider, opts ...web.Option) *boundFixture {
	t.Helper()
	store, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h, err := web.New(prov, store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	f := &boundFixture{h: h, store: store}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		defer f.calls.Done()
		h.ServeHTTP(w, r)
	}))
	f.srv.Listener = smallBuffers{f.srv.Listener}
	f.srv.Start()
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		h.Close()
		f.srv.Close()
		store.Close()
	})
	return f
}

// openStream posts a chat message on a raw connection with a small read
// buffer and reads the response's status line and headers, leaving the
// body unread.
func openStream(t *testing.T, addr string) (net.Conn, io.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).SetReadBuffer(64 << 10)
	body := chatBody("", "write a lot")
	fmt.Fprintf(c, "POST /api/chat HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	br := bufio.NewReaderSize(c, 4<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return c, resp.Body
}

// records is a slog handler that keeps every record's message and error.
type records struct {
	mu   sync.Mutex
	errs map[string][]error
	seen chan string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	var err error
	rec.Attrs(func(a slog.Attr) bool {
		if e, ok := a.Value.Any().(error); ok && a.Key == "err" {
			err = e
		}
		return true
	})
	r.mu.Lock()
	r.errs[rec.Message] = append(r.errs[rec.Message], err)
	r.mu.Unlock()
	select {
	case r.seen <- rec.Message:
	default:
	}
	return nil
}

const streamEnded = "lode: web stream ended before its turn; the browser left or stopped reading"

// TestClientThatNeverReads: a browser that posts and then reads nothing
// has its stream's write time out and its handler return; the turn then
// runs to its end and is stored whole (FinishOnDisconnect) or is cancelled
// (CancelOnDisconnect) and stores its answer as stopped: no more than the
// start of its text, when the stream still kept it (how much the kernel's
// buffers took decides), and a Finish with web.StoppedReason; no
// goroutine is left.
func TestClientThatNeverReads(t *testing.T) {
	const size = 4 << 20
	cases := []struct {
		name   string
		policy web.DisconnectPolicy
		whole  bool
	}{
		{"finish", web.FinishOnDisconnect, true},
		{"cancel", web.CancelOnDisconnect, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			prov := newBigAnswer(size, 1<<10)
			logs := &records{errs: map[string][]error{}, seen: make(chan string, 16)}
			f := serveBounded(t, prov, web.WithWriteTimeout(50*time.Millisecond), web.WithLogger(slog.New(logs)), web.WithDisconnect(c.policy))
			conn, _ := openStream(t, f.srv.Listener.Addr().String())
			defer conn.Close()
			for msg := range logs.seen {
				if msg == streamEnded {
					break
				}
			}
			f.calls.Wait()
			// The turn goes on without its browser, or stops; Shutdown
			// waits for it.
			if err := f.h.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			logs.mu.Lock()
			errs := logs.errs[streamEnded]
			logs.mu.Unlock()
			if len(errs) != 1 || !errors.Is(errs[0], os.ErrDeadlineExceeded) {
				t.Fatalf("the stream ended with %v, want one write past its deadline", errs)
			}
			var ids []string
			for info, err := range f.store.List(context.Background()) {
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, info.ID)
			}
			if len(ids) != 1 {
				t.Fatalf("%d threads stored, want 1", len(ids))
			}
			got := turns(t, f.store, ids[0])
			if len(got) == 0 || got[0].Role != ledger.RoleUser {
				t.Fatalf("stored %v, want the user's message first", got)
			}
			if c.whole && (len(got) != 2 || got[1].Role != ledger.RoleAssistant || len(got[1].Artifacts) != 1 || got[1].Artifacts[0].(artifact.Text).Content != prov.text) {
				t.Fatalf("the stored answer is not the whole %d-byte text", size)
			}
			// Cancelled, the turn stores the start of its text, if its
			// stream kept it, and the Finish that says it stopped.
			if !c.whole {
				if len(got) != 2 || got[1].Role != ledger.RoleAssistant {
					t.Fatalf("stored %d turns, want the user's and the stopped answer", len(got))
				}
				arts := got[1].Artifacts
				if arts[len(arts)-1] != (artifact.Finish{Reason: web.StoppedReason}) {
					t.Fatalf("the stopped answer is stored as %v, want it to end with its Finish", arts)
				}
				if len(arts) == 2 {
					text, _ := arts[0].(artifact.Text)
					if text.Content == "" || len(text.Content) > web.DefaultStreamBufferBytes || !strings.HasPrefix(prov.text, text.Content) {
						t.Fatalf("the stopped answer stored %d bytes, want a start of the answer, at most %d bytes", len(text.Content), web.DefaultStreamBufferBytes)
					}
				} else if len(arts) != 1 {
					t.Fatalf("the stopped answer is stored as %d artifacts", len(arts))
				}
			}
			conn.Close()
			f.srv.Close()
			goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"))
		})
	}
}

// heapSample reads the heap's object bytes, live or not yet swept (what
// runtime.MemStats calls HeapAlloc), and the live heap as of the last GC,
// without stopping the world.
func heapSample(s []metrics.Sample) (heap, live uint64) {
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// TestSlowReadersHeapBound runs 20 turns at once, each streaming a 4 MiB
// answer in 1 KiB deltas, to 15 browsers that read 64 KiB each time the
// test samples the heap and 5 that read nothing and leave at the end.
// Every turn waits on its browser instead of queueing the answer, so the
// heap stays within a bound that does not grow with the answers' size;
// then every slow stream is whole, every turn stored (the idle browsers'
// too), and no goroutine left. The bound and the figures measured are in
// BENCHMARKS.md.
func TestSlowReadersHeapBound(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping 80 MiB of streams")
	}
	const (
		n, idle = 20, 5
		size    = 4 << 20
		step    = 64 << 10
		// The bounds on the live heap above the start, generous for
		// -race. While the answers stream, the queues hold about 1.4 MiB
		// per stream (28 MiB here; 40 to 60 MiB measured in all). Once
		// turns end, the file ledger
		// encodes each 4 MiB answer as it stores it, several copies at
		// once, which a turn costs however it is read. Unbounded queues
		// reached 1.29 GiB.
		streamingBound = 96 << 20
		bound          = 512 << 20
	)
	before := goleak.IgnoreCurrent()
	prov := newBigAnswer(size, 1<<10)
	// The readers are paced by the rounds of measure, each a full GC of a
	// heap of hundreds of MiB under -race: on a loaded machine a round can
	// outlast the default write timeout, which would drop a slow reader
	// this test means to keep. The bound on memory must hold however long
	// a reader takes.
	f := serveBounded(t, prov, quiet(), web.WithWriteTimeout(time.Hour))
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	runtime.GC()
	_, base := heapSample(sample)
	// measure collects and reads the live heap as that collection marked
	// it (what other goroutines allocate after it does not count; it is
	// not live, and counting it made the figure wander with the
	// machine's load): a sample per round of
	// reads, which the readers wait for. Samples taken before any turn
	// ended measure the streaming alone.
	var peak, streamingPeak uint64
	measure := func() {
		streaming := !prov.ended.Load()
		runtime.GC()
		_, h := heapSample(sample)
		peak = max(peak, h)
		if streaming {
			streamingPeak = max(streamingPeak, h)
		}
	}

	addr := f.srv.Listener.Addr().String()
	conns := make([]net.Conn, n)
	readers := make([]io.Reader, n)
	for i := range n {
		conns[i], readers[i] = openStream(t, addr)
		defer conns[i].Close()
	}
	type result struct {
		read int
		tail []byte
		err  error
	}
	results := make([]result, n)
	// Each slow reader takes one token per step it reads.
	tokens := make([]chan struct{}, n-idle)
	done := make(chan int, n)
	var wg sync.WaitGroup
	read := func(i int, tok <-chan struct{}) {
		defer wg.Done()
		defer func() { done <- i }()
		buf := make([]byte, step)
		tail := make([]byte, 0, 256)
		for {
			if tok != nil {
				if _, ok := <-tok; !ok {
					return
				}
			}
			k, err := io.ReadFull(readers[i], buf)
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.EOF
			}
			results[i].read += k
			tail = append(tail, buf[:k]...)
			if len(tail) > 128 {
				tail = append(tail[:0], tail[len(tail)-128:]...)
			}
			if err != nil {
				results[i].tail = tail
				if !errors.Is(err, io.EOF) {
					results[i].err = err
				}
				return
			}
			if bytes.HasSuffix(tail, []byte("data: [DONE]\n\n")) {
				results[i].tail = tail
				return
			}
		}
	}
	for i := range tokens {
		tokens[i] = make(chan struct{})
		wg.Add(1)
		go read(i, tokens[i])
	}
	active := len(tokens)
	finished := make([]bool, len(tokens))
	for active > 0 {
		measure()

		for i, tok := range tokens {
			if finished[i] {
				continue
			}
			select {
			case tok <- struct{}{}:
			case j := <-done:
				finished[j] = true
				active--
			}
		}
	}
	measure()
	wg.Wait()
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	all, streamed := peak-min(peak, base), streamingPeak-min(streamingPeak, base)
	t.Logf("live heap's peak above the start, %d streams of %d MiB: %.1f MiB while streaming (bound %d), %.1f MiB in all (bound %d)",
		n, size>>20, mib(streamed), streamingBound>>20, mib(all), bound>>20)
	if streamed > streamingBound || all > bound {
		t.Errorf("over a bound: the live heap grew by %.1f MiB while streaming, %.1f MiB in all", mib(streamed), mib(all))
	}
	want := []byte(`data: {"finishReason":"stop","type":"finish"}` + "\n\ndata: [DONE]\n\n")
	for i, r := range results[:n-idle] {
		if r.err != nil || r.read < size || !bytes.HasSuffix(r.tail, want) {
			t.Errorf("stream %d: %v after %d bytes, ending %q", i, r.err, r.read, r.tail)
		}
	}
	// The idle browsers leave; their turns go on and are stored.
	for _, c := range conns {
		c.Close()
	}
	if err := f.h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.calls.Wait()
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
	f.srv.Close()
	goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"))
}
