package retry

import (
	"context"
	"errors"
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

func TestPlanWait(t *testing.T) {
	errEnded := errors.New("ended")
	cases := []struct {
		name      string
		wait      time.Duration
		named     bool
		sleepErr  error
		wantAgain bool
		wantErr   error
		wantSlept []time.Duration
	}{
		{name: "named", wait: 3 * time.Second, named: true, wantAgain: true, wantSlept: []time.Duration{3 * time.Second}},
		{name: "named too long", wait: time.Hour, named: true, wantSlept: nil},
		{name: "backoff", wait: time.Hour, named: false, wantAgain: true, wantSlept: []time.Duration{-1}},
		{name: "context ends", wait: time.Second, named: true, sleepErr: errEnded, wantErr: errEnded, wantSlept: []time.Duration{time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var slept []time.Duration
			p := Plan{Base: time.Second, Cap: 4 * time.Second, MaxWait: time.Minute,
				Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return tc.sleepErr }}
			again, err := p.Wait(context.Background(), 1, 503, tc.wait, tc.named)
			if again != tc.wantAgain || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("Wait = %v, %v; want %v, %v", again, err, tc.wantAgain, tc.wantErr)
			}
			if len(slept) != len(tc.wantSlept) {
				t.Fatalf("slept %v, want %v", slept, tc.wantSlept)
			}
			for i, d := range tc.wantSlept {
				// -1: a backoff of attempt 1, between 1s and 2s.
				if (d == -1 && (slept[i] < time.Second || slept[i] > 2*time.Second)) || (d != -1 && slept[i] != d) {
					t.Errorf("slept %v, want %v", slept, tc.wantSlept)
				}
			}
		})
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), 0); err != nil {
		t.Errorf("Sleep(0) = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on an ended context = %v", err)
	}
}
