package retry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// replies answers the n-th request with the n-th status and records what
// was sent.
type replies struct {
	status []int
	header http.Header
	sent   []string
	got    []http.Header
}

func (r *replies) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	r.sent = append(r.sent, string(b))
	r.got = append(r.got, req.Header.Clone())
	st := r.status[len(r.sent)-1]
	return &http.Response{StatusCode: st, Header: r.header, Body: io.NopCloser(strings.NewReader("body " + http.StatusText(st)))}, nil
}

func TestSend(t *testing.T) {
	cases := []struct {
		name     string
		status   []int
		retries  int
		header   http.Header
		retry    func(*http.Response, []byte) bool
		body     func([]byte) (time.Duration, bool)
		want     int // the status returned
		attempts int
		after    time.Duration
		waits    []time.Duration
	}{
		{name: "accepted at once", status: []int{200}, retries: 2, want: 200, attempts: 1},
		{name: "retried until accepted", status: []int{503, 429, 200}, retries: 2, want: 200, attempts: 3,
			waits: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}},
		{name: "retries run out", status: []int{503, 503}, retries: 1, want: 503, attempts: 2, waits: []time.Duration{10 * time.Millisecond}},
		{name: "not retryable", status: []int{400}, retries: 2, want: 400, attempts: 1},
		{name: "the wait asked for", status: []int{429, 200}, retries: 2, header: http.Header{"Retry-After": {"3"}}, want: 200, attempts: 2,
			after: 3 * time.Second, waits: []time.Duration{3 * time.Second}},
		{name: "a wait too long is not made", status: []int{429}, retries: 2, header: http.Header{"Retry-After": {"120"}}, want: 429, attempts: 1,
			after: 2 * time.Minute},
		{name: "the adapter says no", status: []int{429}, retries: 2, retry: func(_ *http.Response, data []byte) bool { return !strings.Contains(string(data), "Many") },
			want: 429, attempts: 1},
		{name: "the wait the body names", status: []int{429, 200}, retries: 2, body: bodyWait, want: 200, attempts: 2,
			after: 4 * time.Second, waits: []time.Duration{4 * time.Second}},
		{name: "the header's wait before the body's", status: []int{429, 200}, retries: 2, header: http.Header{"Retry-After": {"3"}},
			body: bodyWait, want: 200, attempts: 2, after: 3 * time.Second, waits: []time.Duration{3 * time.Second}},
		{name: "a body naming no wait", status: []int{503, 200}, retries: 2, body: func([]byte) (time.Duration, bool) { return 0, false },
			want: 200, attempts: 2, waits: []time.Duration{10 * time.Millisecond}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := &replies{status: tc.status, header: tc.header}
			var waits []time.Duration
			s := &Sender{
				Client: &http.Client{Transport: rt}, MaxRetries: tc.retries, Now: time.Now,
				Plan: Plan{Base: 10 * time.Millisecond, Cap: time.Second, MaxWait: time.Minute,
					Sleep: func(_ context.Context, d time.Duration) error {
						waits = append(waits, d.Truncate(10*time.Millisecond))
						return nil
					}},
				Prepare:   func(r *http.Request) { r.Header.Set("X-Try", "1") },
				Delay:     func(h http.Header, now time.Time, _ int) (time.Duration, bool) { return After(h, now) },
				BodyDelay: tc.body,
				Retry: func(resp *http.Response, data []byte) bool {
					if tc.retry != nil {
						return tc.retry(resp, data)
					}
					return Retryable(resp.StatusCode)
				},
			}
			req, _ := http.NewRequest(http.MethodPost, "http://h.test/x", nil)
			var o Outcome
			resp, err := s.Send(t.Context(), req, []byte(`{"a":1}`), &o)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.want || o.Attempts != tc.attempts || o.RetryAfter != tc.after {
				t.Errorf("status %d, %+v; want %d, %d attempts, after %s", resp.StatusCode, o, tc.want, tc.attempts, tc.after)
			}
			if len(waits) != len(tc.waits) {
				t.Errorf("waits = %v, want %v", waits, tc.waits)
			}
			for i, b := range rt.sent {
				if b != `{"a":1}` || rt.got[i].Get("X-Try") != "1" {
					t.Errorf("attempt %d sent %q with %v", i, b, rt.got[i])
				}
			}
			if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 && string(b) != "body "+http.StatusText(resp.StatusCode) {
				t.Errorf("refusal body = %q", b)
			}
		})
	}
}

// bodyWait reads a wait of 4s from a body that is the refusal's status
// text, as replies sends it.
func bodyWait(data []byte) (time.Duration, bool) {
	if strings.HasPrefix(string(data), "body ") {
		return 4 * time.Second, true
	}
	return 0, false
}

func TestSendContext(t *testing.T) {
	rt := &replies{status: []int{503, 503}}
	ctx, cancel := context.WithCancel(t.Context())
	s := &Sender{
		Client: &http.Client{Transport: rt}, MaxRetries: 3, Now: time.Now,
		Plan:  Plan{Base: time.Millisecond, Cap: time.Millisecond, MaxWait: time.Minute, Sleep: func(ctx context.Context, _ time.Duration) error { cancel(); return ctx.Err() }},
		Delay: func(http.Header, time.Time, int) (time.Duration, bool) { return 0, false },
		Retry: func(*http.Response, []byte) bool { return true },
	}
	req, _ := http.NewRequest(http.MethodPost, "http://h.test/x", nil)
	var o Outcome
	if _, err := s.Send(ctx, req, nil, &o); !errors.Is(err, context.Canceled) || o.Attempts != 1 {
		t.Fatalf("err = %v, %+v", err, o)
	}
	if _, err := s.Send(ctx, req, nil, &o); !errors.Is(err, context.Canceled) || len(rt.sent) != 1 {
		t.Fatalf("on a cancelled context: err = %v, %d sent", err, len(rt.sent))
	}
}
