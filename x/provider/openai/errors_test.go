package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/x/provider/internal/retry"

	"github.com/lodeworks/lode/x/provider/internal/providertest"
)

func TestHTTPErrors(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		sentinel error
		want     string
	}{{
		name:     "401",
		status:   401,
		body:     `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
		sentinel: ErrUnauthorized,
		want:     `openai: 401 Unauthorized: Incorrect API key provided: sk-test. — check the API key (WithAPIKey or OPENAI_API_KEY)`,
	}, {
		name:     "403",
		status:   403,
		body:     `{"error":{"message":"Project does not have access to model gpt-test","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
		sentinel: ErrForbidden,
		want:     `openai: 403 Forbidden: Project does not have access to model gpt-test — the API key may not use model "gpt-test" here: check the key's project, organization and permissions`,
	}, {
		name:     "404",
		status:   404,
		body:     `{"error":{"message":"The model gpt-test does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
		sentinel: ErrNotFound,
		want:     `openai: 404 Not Found: The model gpt-test does not exist or you do not have access to it. — check the model name "gpt-test" and the base URL "BASE" (servers usually expect it to end in /v1)`,
	}, {
		name:     "404 from a server that sends a string error (Ollama)",
		status:   404,
		body:     `{"error":"model \"gpt-test\" not found, try pulling it first"}`,
		sentinel: ErrNotFound,
		want:     `openai: 404 Not Found: model "gpt-test" not found, try pulling it first — check the model name "gpt-test" and the base URL "BASE" (servers usually expect it to end in /v1)`,
	}, {
		name:     "404 with a plain-text body (wrong base URL)",
		status:   404,
		body:     "404 page not found\n",
		sentinel: ErrNotFound,
		want:     `openai: 404 Not Found: 404 page not found — check the model name "gpt-test" and the base URL "BASE" (servers usually expect it to end in /v1)`,
	}, {
		name:   "400 passes the server's message",
		status: 400,
		body:   `{"error":{"message":"Invalid 'messages[1].content': string too long.","type":"invalid_request_error","param":"messages[1].content","code":"string_above_max_length"}}`,
		want:   `openai: 400 Bad Request: Invalid 'messages[1].content': string too long.`,
	}, {
		name:     "400 context length exceeded (OpenAI)",
		status:   400,
		body:     `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		sentinel: ErrContextLength,
		want:     `openai: 400 Bad Request: This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. — the conversation no longer fits model "gpt-test"'s context window: shorten the request with a history policy (x/history, history: in lode.yaml)`,
	}, {
		name:     "400 context length exceeded (vLLM wording, no code)",
		status:   400,
		body:     `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`,
		sentinel: ErrContextLength,
		want:     `openai: 400 Bad Request: This model's maximum context length is 4096 tokens. However, you requested 5000 tokens. — the conversation no longer fits model "gpt-test"'s context window: shorten the request with a history policy (x/history, history: in lode.yaml)`,
	}, {
		name:     "429 out of quota is not retried",
		status:   429,
		body:     `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		sentinel: ErrRateLimited,
		want:     `openai: 429 Too Many Requests: You exceeded your current quota. — the account is out of quota: check its plan and billing`,
	}}
	for _, tc := range cases {
		for _, streaming := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: "/stream", false: "/whole"}[streaming], func(t *testing.T) {
				f := newFake(t, jsonReply(tc.status, tc.body))
				p := f.provider(t, WithStreaming(streaming))
				err := drain(t.Context(), p, userReq("hi"))
				var ae *APIError
				if !errors.As(err, &ae) {
					t.Fatalf("err = %v (%T), want *APIError", err, err)
				}
				want := strings.ReplaceAll(tc.want, "BASE", f.srv.URL+"/v1")
				if err.Error() != want {
					t.Errorf("err =\n%s\nwant\n%s", err, want)
				}
				if ae.StatusCode != tc.status || ae.Attempts != 1 {
					t.Errorf("status %d attempts %d", ae.StatusCode, ae.Attempts)
				}
				if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
					t.Errorf("errors.Is(%v) = false", tc.sentinel)
				}
				if n := len(f.requests()); n != 1 {
					t.Errorf("%d requests, want 1", n)
				}
			})
		}
	}
}

// sleeps records the waits a provider asked for.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return nil
}

func TestRetry(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	rate := `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	ok := sse(textChunk("ok"), finishChunk("stop"))
	cases := []struct {
		name    string
		replies []http.HandlerFunc
		opts    []Option
		waits   []time.Duration // exact waits; nil with bounds set checks bounds
		bounds  [][2]time.Duration
		wantErr string
		status  int
	}{{
		name:    "Retry-After in seconds",
		replies: []http.HandlerFunc{jsonReply(429, rate, "Retry-After", "7"), ok},
		waits:   []time.Duration{7 * time.Second},
	}, {
		name:    "Retry-After as an HTTP date",
		replies: []http.HandlerFunc{jsonReply(429, rate, "Retry-After", now.Add(45*time.Second).Format(http.TimeFormat)), ok},
		waits:   []time.Duration{45 * time.Second},
	}, {
		name:    "Retry-After in the past",
		replies: []http.HandlerFunc{jsonReply(503, "busy", "Retry-After", now.Add(-time.Hour).Format(http.TimeFormat)), ok},
		waits:   []time.Duration{0},
	}, {
		name:    "retry-after-ms wins over Retry-After",
		replies: []http.HandlerFunc{jsonReply(429, rate, "Retry-After-Ms", "250", "Retry-After", "9"), ok},
		waits:   []time.Duration{250 * time.Millisecond},
	}, {
		name:    "Retry-After of 0",
		replies: []http.HandlerFunc{jsonReply(429, rate, "Retry-After", "0"), ok},
		waits:   []time.Duration{0},
	}, {
		name:    "unreadable Retry-After falls back to backoff",
		replies: []http.HandlerFunc{jsonReply(502, "bad gateway", "Retry-After", "soon"), ok},
		bounds:  [][2]time.Duration{{250 * time.Millisecond, 500 * time.Millisecond}},
	}, {
		name: "reset of the exhausted limit, as a duration",
		replies: []http.HandlerFunc{jsonReply(429, rate,
			"X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "1.5s",
			"X-Ratelimit-Remaining-Tokens", "9000", "X-Ratelimit-Reset-Tokens", "20s"), ok},
		waits: []time.Duration{1500 * time.Millisecond},
	}, {
		name: "both limits exhausted: the longer reset",
		replies: []http.HandlerFunc{jsonReply(429, rate,
			"X-Ratelimit-Remaining-Requests", "0", "X-Ratelimit-Reset-Requests", "2s",
			"X-Ratelimit-Remaining-Tokens", "0", "X-Ratelimit-Reset-Tokens", "7.66s"), ok},
		waits: []time.Duration{7660 * time.Millisecond},
	}, {
		name: "resets without remaining counts: the longest",
		replies: []http.HandlerFunc{jsonReply(429, rate,
			"X-Ratelimit-Reset-Requests", "2s", "X-Ratelimit-Reset-Tokens", "1m0s"), ok},
		waits: []time.Duration{time.Minute},
	}, {
		name:    "X-RateLimit-Reset as Unix milliseconds",
		replies: []http.HandlerFunc{jsonReply(429, rate, "X-RateLimit-Reset", strconv.FormatInt(now.Add(12*time.Second).UnixMilli(), 10)), ok},
		waits:   []time.Duration{12 * time.Second},
	}, {
		name:    "X-RateLimit-Reset as Unix seconds",
		replies: []http.HandlerFunc{jsonReply(429, rate, "X-RateLimit-Reset", strconv.FormatInt(now.Add(30*time.Second).Unix(), 10)), ok},
		waits:   []time.Duration{30 * time.Second},
	}, {
		name:    "X-RateLimit-Reset as seconds to wait",
		replies: []http.HandlerFunc{jsonReply(429, rate, "X-RateLimit-Reset", "4"), ok},
		waits:   []time.Duration{4 * time.Second},
	}, {
		name:    "Retry-After wins over X-RateLimit-Reset",
		replies: []http.HandlerFunc{jsonReply(429, rate, "Retry-After", "2", "X-RateLimit-Reset", "9"), ok},
		waits:   []time.Duration{2 * time.Second},
	}, {
		name:    "unreadable X-RateLimit-Reset falls back to backoff",
		replies: []http.HandlerFunc{jsonReply(429, rate, "X-RateLimit-Reset", "soon"), ok},
		bounds:  [][2]time.Duration{{250 * time.Millisecond, 500 * time.Millisecond}},
	}, {
		name:    "X-RateLimit-Reset on a 503 is not a wait",
		replies: []http.HandlerFunc{jsonReply(503, "busy", "X-RateLimit-Reset", "9"), ok},
		bounds:  [][2]time.Duration{{250 * time.Millisecond, 500 * time.Millisecond}},
	}, {
		name:    "a reset beyond WithMaxRetryWait is not waited for",
		replies: []http.HandlerFunc{jsonReply(429, rate, "X-Ratelimit-Reset-Tokens", "6m0s")},
		waits:   []time.Duration{},
		wantErr: "openai: 429 Too Many Requests: Rate limit reached — rate limited; the server asked to wait 6m0s",
		status:  429,
	}, {
		name: "5xx exhausted after backoff",
		replies: []http.HandlerFunc{
			jsonReply(500, `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`),
			jsonReply(500, `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`),
			jsonReply(500, `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`),
		},
		bounds:  [][2]time.Duration{{250 * time.Millisecond, 500 * time.Millisecond}, {500 * time.Millisecond, time.Second}},
		wantErr: "openai: 500 Internal Server Error: The server had an error (after 3 attempts) — the server failed; try again later",
		status:  500,
	}, {
		name: "more retries allowed",
		replies: []http.HandlerFunc{
			jsonReply(503, "x"), jsonReply(503, "x"), jsonReply(503, "x"), jsonReply(503, "x"), ok,
		},
		opts: []Option{WithMaxRetries(4)},
		bounds: [][2]time.Duration{
			{250 * time.Millisecond, 500 * time.Millisecond}, {500 * time.Millisecond, time.Second},
			{time.Second, 2 * time.Second}, {2 * time.Second, 4 * time.Second},
		},
	}, {
		name:    "retries disabled",
		replies: []http.HandlerFunc{jsonReply(429, rate, "Retry-After", "1")},
		opts:    []Option{WithMaxRetries(0)},
		waits:   []time.Duration{},
		wantErr: "openai: 429 Too Many Requests: Rate limit reached — rate limited; the server asked to wait 1s",
		status:  429,
	}, {
		name:    "a wait longer than WithMaxRetryWait is not waited for",
		replies: []http.HandlerFunc{jsonReply(429, rate, "Retry-After", "120")},
		opts:    []Option{WithMaxRetryWait(30 * time.Second)},
		waits:   []time.Duration{},
		wantErr: "openai: 429 Too Many Requests: Rate limit reached — rate limited; the server asked to wait 2m0s",
		status:  429,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.replies...)
			var s sleeps
			opts := append([]Option{withSleep(s.sleep), withClock(func() time.Time { return now })}, tc.opts...)
			_, arts, err := providertest.CollectContext(t.Context(), f.provider(t, opts...), userReq("hi"))
			if tc.wantErr != "" {
				var ae *APIError
				if !errors.As(err, &ae) || err.Error() != tc.wantErr || ae.StatusCode != tc.status {
					t.Fatalf("err = %v, want %s", err, tc.wantErr)
				}
				if ae.Attempts != len(tc.replies) {
					t.Errorf("attempts = %d, want %d", ae.Attempts, len(tc.replies))
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if arts[0] != (artifact.Text{Content: "ok"}) {
					t.Errorf("artifacts = %#v", arts)
				}
			}
			if n := len(f.requests()); n != len(tc.replies) {
				t.Errorf("%d requests, want %d", n, len(tc.replies))
			}
			if tc.waits != nil && !equalDurations(s.d, tc.waits) {
				t.Errorf("waits = %v, want %v", s.d, tc.waits)
			}
			if tc.bounds != nil {
				if len(s.d) != len(tc.bounds) {
					t.Fatalf("waits = %v, want %d", s.d, len(tc.bounds))
				}
				for i, b := range tc.bounds {
					if s.d[i] < b[0] || s.d[i] > b[1] {
						t.Errorf("wait %d = %v, want within %v", i, s.d[i], b)
					}
				}
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

func TestRetryBoundedByContext(t *testing.T) {
	rate := `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`
	t.Run("a deadline sooner than the wait returns the error at once", func(t *testing.T) {
		f := newFake(t, jsonReply(429, rate, "Retry-After", "20"))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var s sleeps
		err := drain(ctx, f.provider(t, withSleep(s.sleep)), userReq("hi"))
		var ae *APIError
		if !errors.As(err, &ae) || ae.RetryAfter != 20*time.Second || len(s.d) != 0 {
			t.Fatalf("err = %v, waits = %v", err, s.d)
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		f := newFake(t, jsonReply(503, "busy", "Retry-After", "5"))
		ctx, cancel := context.WithCancel(t.Context())
		p := f.provider(t, withSleep(func(ctx context.Context, d time.Duration) error {
			cancel()
			return retry.Sleep(ctx, d) // the real wait, ended by the cancellation
		}))
		err := drain(ctx, p, userReq("hi"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("%d requests", n)
		}
	})
}

func TestCancelMidStream(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+textChunk("first")+"\n\n")
		w.(http.Flusher).Flush()
		select { // a model that goes quiet
		case <-r.Context().Done():
		case <-release:
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []artifact.Artifact
	var err error
	for a, e := range f.provider(t).Invoke(ctx, userReq("hi")) {
		if e != nil {
			err = e
			break
		}
		got = append(got, a)
		cancel()
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(got) != 1 || got[0] != (artifact.TextDelta{Content: "first"}) {
		t.Errorf("got %#v", got)
	}
}

// stallBody yields first, then blocks until it is closed, closing
// waiting when it starts to block.
type stallBody struct {
	first   []byte
	waiting chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func (b *stallBody) Read(p []byte) (int, error) {
	if len(b.first) > 0 {
		n := copy(p, b.first)
		b.first = b.first[n:]
		return n, nil
	}
	close(b.waiting)
	<-b.closed
	return 0, errors.New("read on closed body")
}

func (b *stallBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

func TestCancelThroughTransportIgnoringContext(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "whole"}[streaming], func(t *testing.T) {
			first := "data: " + textChunk("first") + "\n\n"
			if !streaming {
				first = `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hel`
			}
			body := &stallBody{first: []byte(first), waiting: make(chan struct{}), closed: make(chan struct{})}
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: body, Request: r}, nil
			})
			p, err := New(WithModel("m"), WithBaseURL("http://127.0.0.1:1/v1"), WithHTTPClient(&http.Client{Transport: rt}), WithStreaming(streaming))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				<-body.waiting // cancel while the adapter is blocked reading
				cancel()
			}()
			var got []artifact.Artifact
			for a, e := range p.Invoke(ctx, userReq("hi")) {
				if e != nil {
					err = e
					break
				}
				got = append(got, a)
			}
			wantDeltas := 1
			if !streaming {
				wantDeltas = 0
			}
			if !errors.Is(err, context.Canceled) || len(got) != wantDeltas {
				t.Fatalf("err = %v, got %#v", err, got)
			}
		})
	}
}

func TestStreamErrors(t *testing.T) {
	cases := []struct {
		name string
		body string
		kind error
		want string
	}{{
		name: "ends without [DONE] or finish reason",
		body: "data: " + textChunk("Hel") + "\n\n",
		kind: ErrIncomplete,
		want: "openai: incomplete response: the stream ended before data: [DONE] and without a finish reason",
	}, {
		name: "[DONE] but no finish reason",
		body: "data: " + textChunk("Hi") + "\n\ndata: [DONE]\n\n",
		kind: ErrIncomplete,
		want: "openai: incomplete response: the answer ended without a finish reason",
	}, {
		name: "only empty choices without usage",
		body: `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[]}` + "\n\ndata: [DONE]\n\n",
		kind: ErrIncomplete,
		want: "openai: incomplete response: the answer ended without a finish reason",
	}, {
		name: "a tool call cut off before its finish",
		body: "data: " + toolChunk(0, "call_1", "get_weather", `{"city":"Par`) + "\n\n",
		kind: ErrIncomplete,
		want: "openai: incomplete response: the stream ended before data: [DONE] and without a finish reason",
	}, {
		name: "malformed JSON",
		body: "data: " + textChunk("a") + "\n\ndata: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}\n\n",
		kind: ErrMalformed,
		want: `openai: malformed response: chunk 2 is not a valid chunk: unexpected end of JSON input (data: "{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}")`,
	}, {
		name: "a field of the wrong type",
		body: `data: {"id":"x","choices":[{"index":0,"delta":{"content":5}}]}` + "\n\n",
		kind: ErrMalformed,
		want: `openai: malformed response: chunk 1 is not a valid chunk: json: cannot unmarshal number into Go struct field wireDelta.choices.delta.content of type string (data: "{\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":5}}]}")`,
	}, {
		name: "a tool call with no name",
		body: "data: " + chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"arguments":"{\"a\":1}"}}]}`, "null") +
			"\n\ndata: " + finishChunk("tool_calls") + "\n\ndata: [DONE]\n\n",
		kind: ErrInvalidToolCall,
		want: `openai: invalid tool call: tool call 0 (ID "call_1") has no name (data: "{\"a\":1}")`,
	}, {
		name: "two tool calls with one ID",
		body: "data: " + toolChunk(0, "call_1", "a", "{}") + "\n\ndata: " + toolChunk(1, "call_1", "b", "{}") +
			"\n\ndata: " + finishChunk("tool_calls") + "\n\ndata: [DONE]\n\n",
		kind: ErrInvalidToolCall,
		want: `openai: invalid tool call: tool calls 0 and 1 share the ID "call_1"`,
	}, {
		name: "a second choice",
		body: `data: {"id":"x","choices":[{"index":1,"delta":{"content":"b"},"finish_reason":null}]}` + "\n\n",
		kind: ErrMalformed,
		want: "openai: malformed response: chunk 1 has choice 1; one choice was asked for",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, sseRaw(tc.body))
			err := drain(t.Context(), f.provider(t), userReq("hi"))
			var re *ResponseError
			if !errors.As(err, &re) || !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v (%T), want *ResponseError of %v", err, err, tc.kind)
			}
			if err.Error() != tc.want {
				t.Errorf("err =\n%s\nwant\n%s", err, tc.want)
			}
		})
	}
}

func TestStreamFailures(t *testing.T) {
	t.Run("an error event inside the stream", func(t *testing.T) {
		f := newFake(t, sseRaw("data: "+textChunk("a")+"\n\ndata: {\"error\":{\"message\":\"The server is overloaded\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n"))
		err := drain(t.Context(), f.provider(t), userReq("hi"))
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != 0 || err.Error() != "openai: error in stream: The server is overloaded" {
			t.Fatalf("err = %v (%T)", err, err)
		}
	})
	t.Run("a JSON body where a stream was asked for", func(t *testing.T) {
		f := newFake(t, jsonReply(200, `{"id":"x","object":"chat.completion","choices":[]}`))
		err := drain(t.Context(), f.provider(t), userReq("hi"))
		want := `openai: incomplete response: the server answered with "application/json" and no stream events; if it cannot stream, use WithStreaming(false)`
		if !errors.Is(err, ErrIncomplete) || err.Error() != want {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("the connection breaks mid-stream", func(t *testing.T) {
		f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: "+textChunk("a")+"\n\n")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // drops the connection mid-body
		})
		err := drain(t.Context(), f.provider(t), userReq("hi"))
		var re *ResponseError
		if !errors.As(err, &re) || !errors.Is(err, ErrIncomplete) || re.Detail != "the connection broke mid-stream" {
			t.Fatalf("err = %v (%T)", err, err)
		}
	})
	t.Run("no server listening", func(t *testing.T) {
		f := newFake(t)
		p := f.provider(t)
		f.srv.Close()
		err := drain(t.Context(), p, userReq("hi"))
		if err == nil || !strings.HasPrefix(err.Error(), "openai: cannot reach the server at "+f.srv.URL+"/v1: ") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestWholeErrors(t *testing.T) {
	cases := []struct {
		name string
		body string
		kind error
		want string
	}{{
		name: "no choices",
		body: `{"id":"x","object":"chat.completion","model":"m","choices":[]}`,
		kind: ErrIncomplete,
		want: "openai: incomplete response: the response has no choices",
	}, {
		name: "not JSON",
		body: `<html>gateway</html>`,
		kind: ErrMalformed,
		want: "openai: malformed response: the response is not a chat completion: invalid character '<' looking for beginning of value",
	}, {
		name: "cut short",
		body: `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hel`,
		kind: ErrIncomplete,
		want: "openai: incomplete response: the connection closed before the response: unexpected EOF",
	}, {
		name: "no finish reason",
		body: `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":null}]}`,
		kind: ErrIncomplete,
		want: "openai: incomplete response: the answer ended without a finish reason",
	}, {
		name: "a tool call with no name",
		body: `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
		kind: ErrInvalidToolCall,
		want: `openai: invalid tool call: tool call 0 (ID "c") has no name (data: "{}")`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, jsonReply(200, tc.body))
			err := drain(t.Context(), f.provider(t, WithStreaming(false)), userReq("hi"))
			if !errors.Is(err, tc.kind) || err.Error() != tc.want {
				t.Fatalf("err =\n%v\nwant\n%s", err, tc.want)
			}
		})
	}
}
