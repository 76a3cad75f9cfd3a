package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

func errBody(typ, msg string) string {
	return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_1"}`
}

// sleeps records the waits between retries instead of taking them.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

func TestAPIErrors(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name     string
		replies  []reply
		opts     []Option
		sentinel error
		status   int
		typ      string
		attempts int
		waits    []time.Duration
		inMsg    string
		ok       bool
	}{
		{name: "rate limit honours retry-after, then succeeds",
			replies: []reply{{status: 429, header: map[string]string{"Retry-After": "7"}, body: errBody("rate_limit_error", "slow down")}, textAnswer("ok")},
			waits:   []time.Duration{7 * time.Second}, ok: true},
		{name: "retry-after-ms wins",
			replies: []reply{{status: 429, header: map[string]string{"Retry-After": "7", "Retry-After-Ms": "1500"}, body: errBody("rate_limit_error", "x")}, textAnswer("ok")},
			waits:   []time.Duration{1500 * time.Millisecond}, ok: true},
		{name: "rate-limit reset header",
			replies: []reply{{status: 429, header: map[string]string{
				"Anthropic-Ratelimit-Tokens-Reset": now.Add(20 * time.Second).Format(time.RFC3339), "Anthropic-Ratelimit-Tokens-Remaining": "0",
				"Anthropic-Ratelimit-Requests-Reset": now.Add(50 * time.Second).Format(time.RFC3339), "Anthropic-Ratelimit-Requests-Remaining": "9",
			}, body: errBody("rate_limit_error", "x")}, textAnswer("ok")},
			waits: []time.Duration{20 * time.Second}, ok: true},
		{name: "rate limit, wait too long",
			replies:  []reply{{status: 429, header: map[string]string{"Retry-After": "3600"}, body: errBody("rate_limit_error", "slow down")}},
			sentinel: ErrRateLimited, status: 429, typ: "rate_limit_error", attempts: 1, inMsg: "the server asked to wait 1h0m0s"},
		{name: "overloaded, retried until the limit",
			replies: []reply{
				{status: 529, body: errBody("overloaded_error", "Overloaded")},
				{status: 529, body: errBody("overloaded_error", "Overloaded")},
				{status: 529, body: errBody("overloaded_error", "Overloaded")}},
			sentinel: ErrOverloaded, status: 529, typ: "overloaded_error", attempts: 3, inMsg: "529 Overloaded (overloaded_error): Overloaded (after 3 attempts)"},
		{name: "no retries",
			replies: []reply{{status: 500, body: errBody("api_error", "boom")}}, opts: []Option{WithMaxRetries(0)},
			sentinel: ErrServer, status: 500, typ: "api_error", attempts: 1},
		{name: "server says do not retry",
			replies:  []reply{{status: 503, header: map[string]string{"X-Should-Retry": "false"}, body: errBody("api_error", "no")}},
			sentinel: ErrServer, status: 503, attempts: 1},
		{name: "invalid request carries the API's message",
			replies:  []reply{{status: 400, body: errBody("invalid_request_error", "messages.1.content.0.thinking.signature: Field required")}},
			sentinel: ErrInvalidRequest, status: 400, typ: "invalid_request_error", attempts: 1, inMsg: "messages.1.content.0.thinking.signature: Field required"},
		{name: "authentication says what to fix",
			replies:  []reply{{status: 401, body: errBody("authentication_error", "invalid x-api-key")}},
			sentinel: ErrUnauthorized, status: 401, typ: "authentication_error", attempts: 1, inMsg: "check the API key (WithAPIKey or ANTHROPIC_API_KEY)"},
		{name: "permission",
			replies:  []reply{{status: 403, body: errBody("permission_error", "no")}},
			sentinel: ErrForbidden, status: 403, attempts: 1},
		{name: "not found names the model",
			replies:  []reply{{status: 404, body: errBody("not_found_error", "model: nope")}},
			sentinel: ErrNotFound, status: 404, attempts: 1, inMsg: `check the model name "claude-sonnet-4-5"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, c.replies...)
			var s sleeps
			p := f.provider(t, append([]Option{withSleep(s.sleep), WithClock(func() time.Time { return now })}, c.opts...)...)
			_, whole, err := collect(p, &provider.Request{Turns: []ledger.Turn{userTurn("x")}})
			if c.waits != nil && !equalDurations(s.d, c.waits) {
				t.Errorf("waits = %v, want %v", s.d, c.waits)
			}
			if c.ok {
				if err != nil || len(whole) == 0 {
					t.Fatalf("err = %v, whole = %v", err, whole)
				}
				return
			}
			var ae *APIError
			if !errors.As(err, &ae) || !errors.Is(err, c.sentinel) {
				t.Fatalf("err = %v (%T); want an *APIError matching %v", err, err, c.sentinel)
			}
			if ae.StatusCode != c.status || (c.typ != "" && ae.Type != c.typ) || ae.Attempts != c.attempts {
				t.Errorf("status %d type %q attempts %d; want %d %q %d", ae.StatusCode, ae.Type, ae.Attempts, c.status, c.typ, c.attempts)
			}
			if !strings.Contains(err.Error(), c.inMsg) {
				t.Errorf("message %q lacks %q", err, c.inMsg)
			}
			if len(f.bodies) != c.attempts {
				t.Errorf("%d requests, want %d", len(f.bodies), c.attempts)
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestUnreachableAndCancelled(t *testing.T) {
	p, err := New(WithModel("m"), WithBaseURL("http://127.0.0.1:1"), WithEnv(func(string) string { return "" }), WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = collect(p, req(userTurn("x")))
	if err == nil || !strings.Contains(err.Error(), "anthropic: cannot reach the server at http://127.0.0.1:1") {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, e := range p.Invoke(ctx, req(userTurn("x"))) {
		if !errors.Is(e, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", e)
		}
	}
}

func TestTimeout(t *testing.T) {
	block := make(chan struct{})
	f := newFake(t)
	f.srv.Config.Handler = httpHandlerFunc(func() { <-block })
	t.Cleanup(func() { close(block) })
	p := f.provider(t, WithTimeout(50*time.Millisecond))
	_, _, err := collect(p, req(userTurn("x")))
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v (%T)", err, err)
	}
}

func TestNew(t *testing.T) {
	env := map[string]string{EnvAPIKey: "env-key", EnvBaseURL: "http://127.0.0.1:9/"}
	p, err := New(WithModel("claude-opus-4-1"), WithEnv(func(k string) string { return env[k] }))
	if err != nil || p.apiKey != "env-key" || p.BaseURL() != "http://127.0.0.1:9" || p.Model() != "claude-opus-4-1" {
		t.Fatalf("New from env = %+v, %v", p, err)
	}
	cases := []struct {
		name string
		opts []Option
		want error
		msg  string
	}{
		{"no model", []Option{WithAPIKey("k")}, ErrNoModel, ""},
		{"no key for the default URL", []Option{WithModel("m")}, ErrNoAPIKey, ""},
		{"bad URL", []Option{WithModel("m"), WithBaseURL("ftp://x")}, nil, `base URL "ftp://x" is not an http(s) URL`},
		{"small budget", []Option{WithModel("m"), WithAPIKey("k"), WithThinkingBudget(10)}, ErrOption, "WithThinkingBudget(10)"},
		{"unknown cache mode", []Option{WithModel("m"), WithAPIKey("k"), WithCache("sometimes")}, ErrOption, `WithCache("sometimes")`},
		{"odd TTL", []Option{WithModel("m"), WithAPIKey("k"), WithCacheTTL(time.Minute)}, ErrOption, "WithCacheTTL(1m0s)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(append(c.opts, WithEnv(func(string) string { return "" }))...)
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v; want %v containing %q", err, c.want, c.msg)
			}
		})
	}
}

func TestContextWindow(t *testing.T) {
	cases := map[string]int{
		"claude-sonnet-4-5": 200_000, "claude-opus-4-1-20250805": 200_000, "claude-3-5-haiku-latest": 200_000,
		"claude-3-7-sonnet-20250219": 200_000, "anthropic/claude-haiku-4-5": 200_000, "gpt-4o": 0, "": 0,
	}
	for m, want := range cases {
		got, ok := ContextWindow(m)
		if got != want || ok != (want > 0) {
			t.Errorf("ContextWindow(%q) = %d, %v; want %d", m, got, ok, want)
		}
	}
}

// A server that starts a stream and then goes silent is cut off by the
// idle timeout, with an error that names it.
func TestIdleTimeout(t *testing.T) {
	hold := make(chan struct{})
	f := newFake(t)
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sse(msgStart(`{"input_tokens":1,"output_tokens":1}`)).body)
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(hold) })
	_, _, err := collect(f.provider(t, WithIdleTimeout(30*time.Millisecond)), req(userTurn("x")))
	var te *TimeoutError
	if !errors.As(err, &te) || !te.Idle || !errors.Is(err, ErrIdleTimeout) || !errors.Is(err, ErrTimeout) ||
		!strings.Contains(err.Error(), "raise it with WithIdleTimeout") {
		t.Fatalf("err = %v (%T)", err, err)
	}
}
