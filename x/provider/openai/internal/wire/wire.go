package wire

import (
	"bytes"
	"io"
	"net/http"
	"time"

	"github.com/lodeworks/lode/x/provider/internal/core"
	"github.com/lodeworks/lode/x/provider/internal/idle"
	"github.com/lodeworks/lode/x/provider/internal/retry"
)

// Retry backoff of both adapters: from half a second up to eight when the
// server names no wait.
const (
	RetryBase = 500 * time.Millisecond
	RetryCap  = 8 * time.Second
)

// Sender sends one request of an invocation on c: c's headers set on every
// attempt, 429 and 5xx retried (not a 429 for want of quota, which no wait
// cures), with the wait delay reads from a retryable refusal, and g (nil
// for none) guarding the body, and the headers too when stream is set.
func Sender(c *core.Conn, g *idle.Guard, stream bool, delay func(h http.Header, now time.Time, status int) (time.Duration, bool)) *retry.Sender {
	return &retry.Sender{
		Client: c.HTTPClient, MaxRetries: c.MaxRetries, Plan: c.Plan(RetryBase, RetryCap), Now: c.Now,
		Idle: g, IdleHeaders: stream,
		Prepare: func(r *http.Request) {
			for k, vs := range c.Headers {
				r.Header[k] = vs
			}
		},
		Delay: func(h http.Header, now time.Time, status int) (time.Duration, bool) {
			if !retry.Retryable(status) {
				return 0, false
			}
			return delay(h, now, status)
		},
		Retry: func(resp *http.Response, data []byte) bool {
			return retry.Retryable(resp.StatusCode) && !bytes.Contains(data, []byte("insufficient_quota"))
		},
	}
}

// Tee is rc, keeping a copy of what is read in w.
func Tee(rc io.ReadCloser, w *bytes.Buffer) io.ReadCloser { return teeBody{rc, w} }

type teeBody struct {
	io.ReadCloser
	w *bytes.Buffer
}

func (b teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.w.Write(p[:n])
	return n, err
}
