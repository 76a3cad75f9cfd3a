package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// bodies hands out response bodies and counts what was read of them and
// whether each was closed.
type bodies struct {
	mu     sync.Mutex
	opened []*countedBody
}

type countedBody struct {
	r      io.Reader
	mu     sync.Mutex
	read   int
	closed bool
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.mu.Lock()
	b.read += n
	b.mu.Unlock()
	return n, err
}

func (b *countedBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

type reply struct {
	status int
	ctype  string
	body   string
}

// provider answers the n-th request with the n-th reply.
func (bs *bodies) provider(t *testing.T, replies []reply, opts ...Option) *Provider {
	t.Helper()
	var n int
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		bs.mu.Lock()
		defer bs.mu.Unlock()
		rep := replies[min(n, len(replies)-1)]
		n++
		b := &countedBody{r: strings.NewReader(rep.body)}
		bs.opened = append(bs.opened, b)
		return &http.Response{
			StatusCode: rep.status, Status: http.StatusText(rep.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {rep.ctype}}, Body: b, Request: r,
		}, nil
	})
	base := []Option{WithAPIKey("k"), WithModel("m"), WithBaseURL("http://127.0.0.1:1/v1"),
		WithHTTPClient(&http.Client{Transport: rt}), withSleep(noSleep)}
	p, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBodiesClosed checks that every response body is closed however an
// invocation ends, so that no connection (and the goroutines serving it)
// is left behind.
func TestBodiesClosed(t *testing.T) {
	const es = "text/event-stream"
	ok := reply{200, es, sseBody(textChunk("a"), textChunk("b"), finishChunk("stop"))}
	bigError := `{"error":{"message":"` + strings.Repeat("x", 1<<20) + `"}}`
	cases := []struct {
		name    string
		replies []reply
		opts    []Option
		stopAt  int // stop iterating after this many artifacts; 0 means drain
		wantErr error
	}{
		{name: "a whole stream", replies: []reply{ok}},
		{name: "the consumer stops at the first delta", replies: []reply{ok}, stopAt: 1},
		{name: "the consumer stops at the whole text", replies: []reply{ok}, stopAt: 3},
		{name: "a malformed chunk", replies: []reply{{200, es, "data: {oops\n\n"}}, wantErr: ErrMalformed},
		{name: "a stream cut short", replies: []reply{{200, es, "data: " + textChunk("a") + "\n\n"}}, wantErr: ErrIncomplete},
		{name: "a 401 on the streaming path", replies: []reply{{401, "application/json", `{"error":{"message":"bad key"}}`}}, wantErr: ErrUnauthorized},
		{name: "a 400 with a huge body on the streaming path", replies: []reply{{400, "application/json", bigError}}, wantErr: &APIError{}},
		{name: "503s retried, then a stream", replies: []reply{{503, "text/plain", "busy"}, {503, "text/plain", "busy"}, ok}},
		{name: "503s until retries run out", replies: []reply{{503, "text/plain", "busy"}}, wantErr: ErrServer},
		{name: "a whole response", replies: []reply{{200, "application/json", `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`}}, opts: []Option{WithStreaming(false)}},
		{name: "a 400 with a huge body on the whole path", replies: []reply{{400, "application/json", bigError}}, opts: []Option{WithStreaming(false)}, wantErr: &APIError{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var bs bodies
			p := bs.provider(t, tc.replies, tc.opts...)
			var err error
			n := 0
			for _, e := range p.Invoke(t.Context(), userReq("hi")) {
				if e != nil {
					err = e
					break
				}
				if n++; n == tc.stopAt {
					break
				}
			}
			var ae *APIError
			switch want := tc.wantErr; {
			case want == nil && err != nil:
				t.Fatalf("err = %v", err)
			case errors.As(want, &ae):
				if !errors.As(err, &ae) {
					t.Fatalf("err = %v (%T), want *APIError", err, err)
				}
				if len(ae.Message) > 400 {
					t.Errorf("message of %d bytes", len(ae.Message))
				}
			case want != nil && !errors.Is(err, want):
				t.Fatalf("err = %v, want %v", err, want)
			}
			bs.mu.Lock()
			defer bs.mu.Unlock()
			if len(bs.opened) == 0 {
				t.Fatal("no request made")
			}
			for i, b := range bs.opened {
				b.mu.Lock()
				if !b.closed {
					t.Errorf("body %d not closed", i)
				}
				if b.read > maxErrorBody+bytes.MinRead && len(tc.replies[0].body) > maxErrorBody {
					t.Errorf("body %d: read %d bytes of an error", i, b.read)
				}
				b.mu.Unlock()
			}
		})
	}
}

// TestCancelledBeforeInvoke checks that an invocation on a context already
// cancelled sends nothing and says why.
func TestCancelledBeforeInvoke(t *testing.T) {
	var bs bodies
	p := bs.provider(t, []reply{{200, "text/event-stream", sseBody(textChunk("a"), finishChunk("stop"))}})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := drain(ctx, p, userReq("hi")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if len(bs.opened) != 0 {
		t.Errorf("%d requests sent", len(bs.opened))
	}
}
