package retry

import (
	"context"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name    string
		headers map[string]string
		want    time.Duration
		ok      bool
	}{
		{"none", nil, 0, false},
		{"ms first", map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond, true},
		{"seconds", map[string]string{"Retry-After": " 2.5 "}, 2500 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second, true},
		{"date passed", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0, true},
		{"negative ms falls through", map[string]string{"Retry-After-Ms": "-1", "Retry-After": "3"}, 3 * time.Second, true},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"huge saturates", map[string]string{"Retry-After": "1e300"}, math.MaxInt64, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			got, ok := After(h, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("After = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestBackoffBounds(t *testing.T) {
	base, limit := 500*time.Millisecond, 8*time.Second
	for attempt := range 8 {
		d := limit
		if attempt < 5 {
			d = min(base<<attempt, limit)
		}
		for range 50 {
			got := Backoff(attempt, base, limit)
			if got < d/2 || got > d {
				t.Fatalf("Backoff(%d) = %v, outside [%v, %v]", attempt, got, d/2, d)
			}
		}
	}
}

func TestFits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		wait    time.Duration
		maxWait time.Duration
		want    bool
	}{
		{"within", context.Background(), time.Second, time.Minute, true},
		{"at the cap", context.Background(), time.Minute, time.Minute, true},
		{"over the cap", context.Background(), time.Minute + 1, time.Minute, false},
		{"before the deadline", ctx, time.Second, 2 * time.Hour, true},
		{"past the deadline", ctx, 90 * time.Minute, 2 * time.Hour, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fits(tc.ctx, tc.wait, tc.maxWait); got != tc.want {
				t.Errorf("Fits = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRetryable(t *testing.T) {
	for code, want := range map[int]bool{200: false, 400: false, 404: false, 429: true, 500: true, 503: true, 529: true} {
		if got := Retryable(code); got != want {
			t.Errorf("Retryable(%d) = %v", code, got)
		}
	}
}

func TestCloneReplaysBody(t *testing.T) {
	req, _ := http.NewRequest("POST", "http://127.0.0.1/x", strings.NewReader("payload"))
	body, err := ReadBody(req)
	if err != nil || string(body) != "payload" {
		t.Fatalf("ReadBody = %q, %v", body, err)
	}
	for range 2 {
		r := Clone(context.Background(), req, body)
		b, _ := io.ReadAll(r.Body)
		rc, _ := r.GetBody()
		again, _ := io.ReadAll(rc)
		if string(b) != "payload" || string(again) != "payload" || r.ContentLength != 7 {
			t.Fatalf("attempt body %q, GetBody %q, length %d", b, again, r.ContentLength)
		}
	}
}

func TestDrainBounds(t *testing.T) {
	resp := &http.Response{Body: io.NopCloser(strings.NewReader(strings.Repeat("x", MaxErrorBody+10)))}
	data := Drain(resp)
	again, _ := io.ReadAll(resp.Body)
	if len(data) != MaxErrorBody || string(again) != string(data) {
		t.Errorf("drained %d bytes, body then %d", len(data), len(again))
	}
}
