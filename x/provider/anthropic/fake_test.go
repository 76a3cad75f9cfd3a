package anthropic

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

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

// reply is one canned answer of the fake Messages API.
type reply struct {
	status  int
	header  map[string]string
	body    string // an SSE stream, a JSON message or an error body
	sse     bool
	partial bool // the connection is cut after body
}

// fakeAPI speaks the Messages API's wire format: each request gets the
// next reply, and every request body is kept.
type fakeAPI struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	replies []reply
	bodies  []map[string]any
	raw     []string
	headers []http.Header
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
	f.bodies = append(f.bodies, m)
	f.raw = append(f.raw, string(b))
	f.headers = append(f.headers, r.Header.Clone())
	var rep reply
	if len(f.replies) > 0 {
		rep, f.replies = f.replies[0], f.replies[1:]
	} else {
		rep = reply{status: 500, body: `{"type":"error","error":{"type":"api_error","message":"no reply left"}}`}
	}
	f.mu.Unlock()
	if r.URL.Path != "/v1/messages" {
		http.Error(w, "wrong path "+r.URL.Path, 404)
		return
	}
	ct := "application/json"
	if rep.sse {
		ct = "text/event-stream"
	}
	providertest.Answer{Status: rep.status, Header: rep.header, ContentType: ct, Body: rep.body, Partial: rep.partial}.Write(w)
}

func (f *fakeAPI) provider(t *testing.T, opts ...Option) *Provider {
	t.Helper()
	opts = append([]Option{WithAPIKey("test-key"), WithModel("claude-sonnet-4-5"), WithBaseURL(f.srv.URL),
		WithEnv(func(string) string { return "" }),
		withSleep(func(context.Context, time.Duration) error { return nil })}, opts...)
	p, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fakeAPI) body(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[i]
}

// sse writes events in the API's framing: "event: type" then "data: json".
func sse(events ...string) reply {
	var b strings.Builder
	for _, e := range events {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(e), &head); err != nil {
			panic(e)
		}
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", head.Type, e)
	}
	return reply{sse: true, body: b.String()}
}

func msgStart(usage string) string {
	return `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":` + usage + `}}`
}

func blockStart(i int, block string) string {
	return fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, block)
}

func blockDelta(i int, delta string) string {
	return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, delta)
}

func blockStop(i int) string { return fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i) }

func msgDelta(stop, usage string) string {
	return `{"type":"message_delta","delta":{"stop_reason":"` + stop + `","stop_sequence":null},"usage":` + usage + `}`
}

const (
	ping    = `{"type":"ping"}`
	msgStop = `{"type":"message_stop"}`
)

func textDelta(s string) string {
	b, _ := json.Marshal(s)
	return `{"type":"text_delta","text":` + string(b) + `}`
}

// textAnswer is a whole streamed answer saying s.
func textAnswer(s string) reply {
	return sse(msgStart(`{"input_tokens":10,"output_tokens":1}`),
		blockStart(0, `{"type":"text","text":""}`), ping, blockDelta(0, textDelta(s)), blockStop(0),
		msgDelta("end_turn", `{"output_tokens":3}`), msgStop)
}

// collect runs one invocation, returning deltas and whole artifacts apart;
// at digs into decoded JSON: keys for objects, ints for arrays.
var (
	collect = providertest.Collect
	at      = providertest.Dig
)

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// httpHandlerFunc is a handler that runs f and answers nothing.
func httpHandlerFunc(f func()) http.Handler {
	return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { f() })
}
