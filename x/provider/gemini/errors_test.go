package gemini

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

const (
	errBadKey = `{
  "error": {
    "code": 400,
    "message": "API key not valid. Please pass a valid API key.",
    "status": "INVALID_ARGUMENT",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID",
        "domain": "googleapis.com",
        "metadata": {"service": "generativelanguage.googleapis.com"}
      }
    ]
  }
}
`
	errQuota = `{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests"}]},
      {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
    ]
  }
}
`
	errOverloaded = `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`
	okText        = `{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP"}]}`
)

func TestRefusals(t *testing.T) {
	cases := []struct {
		name   string
		rep    reply
		is     error
		status string
		text   string
	}{
		{"bad key", reply{status: 400, body: errBadKey}, ErrUnauthorized, "INVALID_ARGUMENT",
			"gemini: 400 Bad Request (INVALID_ARGUMENT): API key not valid. Please pass a valid API key. — check the API key (WithAPIKey, GEMINI_API_KEY or GOOGLE_API_KEY): it is missing, mistyped or revoked"},
		{"bad request", reply{status: 400, body: `{"error":{"code":400,"message":"* GenerateContentRequest.contents: contents is not specified\n","status":"INVALID_ARGUMENT"}}`}, ErrInvalidRequest, "INVALID_ARGUMENT", ""},
		{"unauthenticated", reply{status: 401, body: `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`}, ErrUnauthorized, "UNAUTHENTICATED", ""},
		{"forbidden", reply{status: 403, body: `{"error":{"code":403,"message":"Method doesn't allow unregistered callers","status":"PERMISSION_DENIED"}}`}, ErrForbidden, "PERMISSION_DENIED", ""},
		{"not found", reply{status: 404, body: `{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta","status":"NOT_FOUND"}}`}, ErrNotFound, "NOT_FOUND", ""},
		{"proxy page", reply{status: 502, body: "<html><body>Bad Gateway</body></html>"}, ErrServer, "", ""},
		{"empty body", reply{status: 500}, ErrServer, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reps := []reply{c.rep, c.rep, c.rep}
			p := newTestProvider(t, newFake(t, reps...))
			_, _, err := collect(p, userText("x"))
			var ae *APIError
			if !errors.As(err, &ae) || !errors.Is(err, c.is) || ae.Status != c.status {
				t.Fatalf("err = %#v", err)
			}
			if c.text != "" && err.Error() != c.text {
				t.Errorf("text:\n%s\nwant:\n%s", err.Error(), c.text)
			}
			if c.rep.status == 400 && ae.Attempts != 1 {
				t.Errorf("a 400 was retried: %d attempts", ae.Attempts)
			}
		})
	}
}

func TestErrorInfoReason(t *testing.T) {
	p := newTestProvider(t, newFake(t, reply{status: 400, body: errBadKey}))
	_, _, err := collect(p, userText("x"))
	var ae *APIError
	if !errors.As(err, &ae) || ae.Reason != "API_KEY_INVALID" || !strings.Contains(string(ae.Details), "ErrorInfo") {
		t.Fatalf("err = %#v", err)
	}
}

func TestRetryHonoursRetryInfo(t *testing.T) {
	f := newFake(t, reply{status: 429, body: errQuota}, reply{status: 503, body: errOverloaded, header: map[string]string{"Retry-After": "2"}}, reply{sse: true, body: sse(okText)})
	s := &noSleep{}
	p := newTestProvider(t, f, withSleep(s.sleep))
	_, whole, err := collect(p, userText("x"))
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) != 2 || len(f.requests()) != 3 {
		t.Fatalf("whole %v after %d requests", whole, len(f.requests()))
	}
	if len(s.waits) != 2 || s.waits[0] != 37*time.Second || s.waits[1] != 2*time.Second {
		t.Errorf("waits %v", s.waits)
	}
	// Every attempt sends the same body.
	rs := f.requests()
	if rs[0].raw != rs[2].raw {
		t.Errorf("retried body differs")
	}
}

func TestRetriesRunOut(t *testing.T) {
	f := newFake(t, reply{status: 503, body: errOverloaded}, reply{status: 503, body: errOverloaded}, reply{status: 503, body: errOverloaded})
	s := &noSleep{}
	p := newTestProvider(t, f, withSleep(s.sleep))
	_, _, err := collect(p, userText("x"))
	var ae *APIError
	if !errors.As(err, &ae) || !errors.Is(err, ErrOverloaded) || !errors.Is(err, ErrServer) || ae.Attempts != 3 {
		t.Fatalf("err = %v", err)
	}
	if len(s.waits) != 2 || s.waits[0] <= 0 || s.waits[1] <= 0 || s.waits[0] > retryCap || s.waits[1] > retryCap {
		t.Errorf("backoff %v", s.waits)
	}
	if !strings.Contains(err.Error(), "(after 3 attempts)") {
		t.Errorf("text %q", err)
	}
}

func TestRetryWaitTooLong(t *testing.T) {
	f := newFake(t, reply{status: 429, body: errQuota}, reply{sse: true, body: sse(okText)})
	s := &noSleep{}
	p := newTestProvider(t, f, withSleep(s.sleep), WithMaxRetryWait(10*time.Second))
	_, _, err := collect(p, userText("x"))
	var ae *APIError
	if !errors.As(err, &ae) || !errors.Is(err, ErrRateLimited) || ae.RetryAfter != 37*time.Second || len(s.waits) != 0 {
		t.Fatalf("err = %v, waits %v", err, s.waits)
	}
	if !strings.Contains(ae.Hint, "wait 37s") {
		t.Errorf("hint %q", ae.Hint)
	}
}

func TestNoRetries(t *testing.T) {
	f := newFake(t, reply{status: 500, body: `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`})
	p := newTestProvider(t, f, WithMaxRetries(0))
	_, _, err := collect(p, userText("x"))
	if !errors.Is(err, ErrServer) || len(f.requests()) != 1 {
		t.Fatalf("err = %v after %d requests", err, len(f.requests()))
	}
}

// An error object inside a 200 stream ends the answer; it is not retried.
func TestErrorInStream(t *testing.T) {
	f := newFake(t, reply{sse: true, body: sse(
		`{"candidates":[{"content":{"parts":[{"text":"Once"}],"role":"model"}}]}`,
		`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`,
	)})
	p := newTestProvider(t, f)
	deltas, _, err := collect(p, userText("x"))
	var ae *APIError
	if !errors.As(err, &ae) || !ae.InStream || !errors.Is(err, ErrOverloaded) || len(deltas) != 1 || len(f.requests()) != 1 {
		t.Fatalf("err = %v, deltas %v", err, deltas)
	}
	if err.Error() != "gemini: error in stream (503 UNAVAILABLE): The model is overloaded. — the model is overloaded; try again shortly" {
		t.Errorf("text %q", err)
	}
}

func TestUnreachable(t *testing.T) {
	f := newFake(t)
	p := newTestProvider(t, f, WithMaxRetries(0))
	f.srv.Close()
	_, _, err := collect(p, userText("x"))
	if err == nil || !strings.HasPrefix(err.Error(), "gemini: cannot reach the server at "+f.srv.URL) {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelled(t *testing.T) {
	p := newTestProvider(t, newFake(t, reply{sse: true, body: sse(okText)}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var err error
	for _, e := range p.Invoke(ctx, userText("x")) {
		err = e
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// The server sends headers and then nothing: the idle limit ends the call.
func TestIdleTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newFake(t)
	srv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte(sse(`{"candidates":[{"content":{"parts":[{"text":"a"}],"role":"model"}}]}`)))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	p := newTestProvider(t, srv, WithIdleTimeout(200*time.Millisecond))
	deltas, _, err := collect(p, userText("x"))
	var te *TimeoutError
	// The first chunk may or may not beat the limit on a loaded machine;
	// the silence after it never does.
	if !errors.As(err, &te) || !te.Idle || !errors.Is(err, ErrIdleTimeout) || !errors.Is(err, ErrTimeout) || len(deltas) > 1 {
		t.Fatalf("err = %v, deltas %v", err, deltas)
	}
}

func TestWholeTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newFake(t)
	srv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	p := newTestProvider(t, srv, WithTimeout(50*time.Millisecond), WithStreaming(false))
	_, _, err := collect(p, userText("x"))
	var te *TimeoutError
	if !errors.As(err, &te) || te.Idle || !errors.Is(err, ErrTimeout) || errors.Is(err, ErrIdleTimeout) {
		t.Fatalf("err = %v", err)
	}
}
