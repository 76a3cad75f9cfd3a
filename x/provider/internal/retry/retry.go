// Package retry holds what the model adapters share about retrying an HTTP
// request: reading the wait a server asked for, the backoff when it named
// none, deciding whether a retry still fits, and replaying the request
// body. Each adapter keeps its own knowledge of which statuses and
// rate-limit headers its API uses.
package retry

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

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// After reads the standard headers a server names its wait in:
// retry-after-ms, then Retry-After in seconds or as an HTTP date.
func After(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			return Seconds(f / 1000), true
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			return Seconds(f), true
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(at.Sub(now), 0), true
		}
	}
	return 0, false
}

// Seconds converts a count of seconds to a Duration, saturating rather
// than overflowing: a server may name any number.
func Seconds(s float64) time.Duration {
	if s*float64(time.Second) >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(s * float64(time.Second))
}

// Backoff is the wait before retry attempt+1 when the server named none:
// exponential from base, capped at limit, with half of it jittered so that
// many clients do not come back at once.
func Backoff(attempt int, base, limit time.Duration) time.Duration {
	d := limit
	if attempt < 5 {
		d = min(base<<attempt, limit)
	}
	return d/2 + rand.N(d/2+1)
}

// Fits reports whether a retry that waits wait still makes sense: the wait
// is within maxWait and ends before ctx's deadline.
func Fits(ctx context.Context, wait, maxWait time.Duration) bool {
	if wait > maxWait {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return false
	}
	return true
}

// Plan is how an adapter waits between attempts.
type Plan struct {
	// Base and Cap shape the backoff used when the server named no wait.
	Base, Cap time.Duration
	// MaxWait is the longest wait worth making.
	MaxWait time.Duration
	// Trace notes each retry on the span in the context.
	Trace bool
	// Sleep waits d, or less when ctx ends, and then returns ctx's error.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Wait waits before retry attempt+1 of a request refused with status:
// wait when the server named it (named), else the backoff. It reports
// false, at once, when the wait is longer than MaxWait or outlasts ctx's
// deadline, and the error of Sleep when ctx ends during the wait.
func (p Plan) Wait(ctx context.Context, attempt, status int, wait time.Duration, named bool) (bool, error) {
	if !named {
		wait = Backoff(attempt, p.Base, p.Cap)
	}
	if !Fits(ctx, wait, p.MaxWait) {
		return false, nil
	}
	if p.Trace {
		Event(ctx, status, attempt, wait)
	}
	if err := p.Sleep(ctx, wait); err != nil {
		return false, err
	}
	return true, nil
}

// Sleep waits d, or less when ctx ends, and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Event notes a retry on the span in ctx, if it records.
func Event(ctx context.Context, status, attempt int, wait time.Duration) {
	trace.SpanFromContext(ctx).AddEvent("retry", trace.WithAttributes(
		attribute.Int("http.response.status_code", status),
		attribute.Int("lode.retry.attempt", attempt+1),
		attribute.Float64("lode.retry.wait_seconds", wait.Seconds()),
	))
}

// ReadBody reads and closes a request's body, so that every attempt can
// send it again.
func ReadBody(req *http.Request) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

// Clone is req for one attempt, carrying body.
func Clone(ctx context.Context, req *http.Request, body []byte) *http.Request {
	r := req.Clone(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return r
}

// MaxErrorBody bounds what is read of a failed response.
const MaxErrorBody = 1 << 16

// Drain reads a failed response's body, bounded, closes it and puts the
// bytes read back in its place, so that the caller can both inspect them
// and hand the response on.
func Drain(resp *http.Response) []byte {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return data
}

// Retryable reports whether a status is worth sending the request again
// for: a rate limit or a server failure.
func Retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}
