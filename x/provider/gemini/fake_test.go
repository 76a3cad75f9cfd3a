package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// reply is one canned answer of the fake Gemini API.
type reply struct {
	status  int
	header  map[string]string
	body    string // an SSE stream, a JSON response or an error body
	sse     bool
	partial bool // the connection is cut after body
}

// sse frames chunks the way the API does with alt=sse.
func sse(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\r\n\r\n")
	}
	return b.String()
}

// seen is one request the fake received.
type seen struct {
	method, path, query string
	header              http.Header
	raw                 string
	body                map[string]any
}

// fakeAPI speaks the Gemini API's wire format: each request gets the next
// reply, and every request is kept.
type fakeAPI struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []reply
	reqs    []seen
}

func newFake(t *testing.T, replies ...reply) *fakeAPI {
	f := &fakeAPI{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	f.mu.Lock()
	f.reqs = append(f.reqs, seen{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), raw: string(b), body: m})
	var rep reply
	if len(f.replies) > 0 {
		rep, f.replies = f.replies[0], f.replies[1:]
	} else {
		rep = reply{status: 500, body: `{"error":{"code":500,"message":"no reply left","status":"INTERNAL"}}`}
	}
	f.mu.Unlock()
	ct := "application/json; charset=UTF-8"
	if rep.sse {
		ct = "text/event-stream"
	}
	providertest.Answer{Status: rep.status, Header: rep.header, ContentType: ct, Body: rep.body, Partial: rep.partial}.Write(w)
}

func (f *fakeAPI) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

// last is the body of the last request.
func (f *fakeAPI) last() map[string]any {
	rs := f.requests()
	if len(rs) == 0 {
		f.t.Fatal("no request was made")
	}
	return rs[len(rs)-1].body
}

// testIDs numbers the IDs of calls sent without one.
func testIDs() Option {
	n := 0
	var mu sync.Mutex
	return withIDs(func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("%s%d", idPrefix, n)
	})
}

// noSleep records the waits between retries instead of sleeping.
type noSleep struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *noSleep) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func newTestProvider(t *testing.T, f *fakeAPI, opts ...Option) *Provider {
	t.Helper()
	base := []Option{
		WithAPIKey("test-key"), WithModel("gemini-2.5-flash"), WithBaseURL(f.srv.URL),
		WithEnv(func(string) string { return "" }), testIDs(), withSleep((&noSleep{}).sleep),
	}
	p, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func userText(s string) *provider.Request {
	return &provider.Request{Turns: turns(user(s))}
}

// collect runs one invocation and splits deltas from whole artifacts; dig
// walks a decoded JSON value by keys and indexes.
var (
	collect = providertest.Collect
	dig     = providertest.Dig
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
