package anthropic

import (
	"bytes"
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// callTransport is the SDK's HTTP client for one invocation. It retries
// 429, 5xx and 529 answers itself (the SDK's own retries are off) so that
// the server's wait is honoured within WithMaxRetryWait, the wait is
// cancellable and testable, and the error can say how many attempts were
// made.
type callTransport struct {
	p          *Provider
	extra      []option.RequestOption
	attempts   int
	retryAfter time.Duration
	// streaming is set once a 2xx answer arrived: errors after it come
	// from inside the body.
	streaming bool
	idle      *idleGuard
}

// maxErrorBody bounds what is read of a failed response.
const maxErrorBody = 1 << 16

func retryable(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

func (t *callTransport) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := req.Clone(ctx)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		t.idle.arm()
		resp, err := t.p.httpc.Do(r)
		t.idle.disarm()
		t.attempts = attempt + 1
		if err != nil {
			return nil, err
		}
		if resp.StatusCode/100 == 2 {
			t.streaming = true
			if t.idle != nil {
				resp.Body = &idleBody{ReadCloser: resp.Body, g: t.idle}
			}
			resp.Body = closeOnDone(ctx, resp.Body)
			return resp, nil
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(data))
		wait, asked := retryDelay(resp.Header, t.p.now())
		if asked {
			t.retryAfter = wait
		}
		should := retryable(resp.StatusCode)
		switch strings.ToLower(resp.Header.Get("X-Should-Retry")) {
		case "true":
			should = true
		case "false":
			should = false
		}
		if !should || attempt >= t.p.maxRetries {
			return resp, nil
		}
		if !asked {
			wait = backoff(attempt)
		}
		if wait > t.p.maxRetryWait {
			return resp, nil
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return resp, nil
		}
		if t.p.tracer != nil {
			trace.SpanFromContext(ctx).AddEvent("retry", trace.WithAttributes(
				attribute.Int("http.response.status_code", resp.StatusCode),
				attribute.Int("lode.retry.attempt", attempt+1),
				attribute.Float64("lode.retry.wait_seconds", wait.Seconds()),
			))
		}
		if err := t.p.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// retryDelay reads how long the server asked to wait: retry-after-ms, then
// retry-after in seconds or as an HTTP date, then the latest of the
// anthropic-ratelimit-*-reset times (RFC 3339) whose remaining count is 0.
func retryDelay(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			return durationOf(f / 1000), true
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			return durationOf(f), true
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(at.Sub(now), 0), true
		}
	}
	var wait time.Duration
	found := false
	for name, vs := range h {
		lower := strings.ToLower(name)
		kind, ok := strings.CutPrefix(lower, "anthropic-ratelimit-")
		if !ok || !strings.HasSuffix(kind, "-reset") || len(vs) == 0 {
			continue
		}
		kind = strings.TrimSuffix(kind, "-reset")
		if rem := strings.TrimSpace(h.Get("Anthropic-Ratelimit-" + kind + "-Remaining")); rem != "" && rem != "0" {
			continue
		}
		at, err := time.Parse(time.RFC3339, strings.TrimSpace(vs[0]))
		if err != nil {
			continue
		}
		found = true
		wait = max(wait, at.Sub(now))
	}
	return max(wait, 0), found
}

func durationOf(seconds float64) time.Duration {
	if seconds*float64(time.Second) >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(seconds * float64(time.Second))
}

// backoff is the wait before retry attempt+1 when the server named none:
// exponential, capped, half of it jittered.
func backoff(attempt int) time.Duration {
	d := retryCap
	if attempt < 5 {
		d = min(retryBase<<attempt, retryCap)
	}
	return d/2 + rand.N(d/2+1)
}

// ctxBody closes a response body when its context ends, which unblocks a
// read at once even through an HTTP client that ignores the context.
type ctxBody struct {
	io.ReadCloser
	stop func() bool
}

func closeOnDone(ctx context.Context, rc io.ReadCloser) io.ReadCloser {
	return &ctxBody{ReadCloser: rc, stop: context.AfterFunc(ctx, func() { rc.Close() })}
}

func (b *ctxBody) Close() error {
	b.stop()
	return b.ReadCloser.Close()
}

// idleGuard cancels an invocation when the server stays silent too long.
// It is armed only while a read waits on the server, so a consumer slow to
// take what was read does not count against the server.
type idleGuard struct {
	d time.Duration
	t *time.Timer
}

func newIdleGuard(d time.Duration, cancel context.CancelCauseFunc) *idleGuard {
	cause := &TimeoutError{Idle: true, Limit: d}
	t := time.AfterFunc(time.Hour, func() { cancel(cause) })
	t.Stop()
	return &idleGuard{d: d, t: t}
}

func (g *idleGuard) arm() {
	if g != nil {
		g.t.Reset(g.d)
	}
}

func (g *idleGuard) disarm() {
	if g != nil {
		g.t.Stop()
	}
}

func (g *idleGuard) stop() { g.t.Stop() }

// idleBody arms its guard while a read is waiting.
type idleBody struct {
	io.ReadCloser
	g *idleGuard
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.g.arm()
	n, err := b.ReadCloser.Read(p)
	b.g.disarm()
	return n, err
}
