package wire

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/x/provider/internal/core"
	"github.com/lodeworks/lode/x/provider/internal/retry"
)

// replies answers each request with the next status and body, recording
// the X-Test header each attempt carried.
type replies struct {
	mu      sync.Mutex
	status  []int
	body    []string
	headers []string
}

func (r *replies) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := len(r.headers)
	r.headers = append(r.headers, req.Header.Get("X-Test"))
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(r.status[i])
	io.WriteString(w, r.body[i])
}

func TestSender(t *testing.T) {
	cases := []struct {
		name     string
		status   []int
		body     []string
		want     int // final status
		attempts int
		delays   int // how often delay was asked
		waits    []time.Duration
	}{
		{"a 5xx is retried", []int{503, 200}, []string{"busy", "ok"}, 200, 2, 1, []time.Duration{time.Second}},
		{"a 429 is retried", []int{429, 429, 200}, []string{"slow", "slow", "ok"}, 200, 3, 2, []time.Duration{time.Second, time.Second}},
		{"no quota is not retried", []int{429}, []string{`{"error":{"code":"insufficient_quota"}}`}, 429, 1, 1, nil},
		{"a 400 is not retried nor its wait read", []int{400}, []string{"bad"}, 400, 1, 0, nil},
		{"the retries run out", []int{500, 500, 500}, []string{"x", "x", "x"}, 500, 3, 3, []time.Duration{time.Second, time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &replies{status: c.status, body: c.body}
			srv := httptest.NewServer(r)
			defer srv.Close()
			var waits []time.Duration
			s := core.Settings{Model: "m", BaseURL: srv.URL, HTTPClient: srv.Client(),
				Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
			s.AddHeader("X-Test", "yes")
			u, _ := url.Parse(srv.URL)
			conn := core.NewConn(&s, u, core.Defaults{MaxRetries: 2, MaxRetryWait: time.Minute})
			delays := 0
			delay := func(h http.Header, now time.Time, status int) (time.Duration, bool) {
				delays++
				return retry.After(h, now)
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
			var o retry.Outcome
			resp, err := Sender(&conn, nil, false, delay).Send(t.Context(), req, []byte(`{}`), &o)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want || o.Attempts != c.attempts || delays != c.delays {
				t.Errorf("status %d, attempts %d, delays read %d; want %d, %d, %d", resp.StatusCode, o.Attempts, delays, c.want, c.attempts, c.delays)
			}
			if !slices.Equal(waits, c.waits) {
				t.Errorf("waits %v, want %v", waits, c.waits)
			}
			for i, h := range r.headers {
				if h != "yes" {
					t.Errorf("attempt %d carried X-Test %q", i+1, h)
				}
			}
		})
	}
}

func TestTee(t *testing.T) {
	var kept bytes.Buffer
	rc := Tee(io.NopCloser(strings.NewReader("whole answer")), &kept)
	got, err := io.ReadAll(rc)
	if err != nil || string(got) != "whole answer" || kept.String() != "whole answer" {
		t.Fatalf("read %q (%v), kept %q", got, err, kept.String())
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
}
