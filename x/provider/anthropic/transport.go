package anthropic

import (
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/lodeworks/lode/x/provider/internal/idle"
	"github.com/lodeworks/lode/x/provider/internal/retry"
)

// callTransport is the SDK's HTTP client for one invocation. It retries
// 429, 5xx and 529 answers itself (the SDK's own retries are off) so that
// the server's wait is honoured within WithMaxRetryWait, the wait is
// cancellable and testable, and the error can say how many attempts were
// made.
type callTransport struct {
	p       *Provider
	extra   []option.RequestOption
	outcome retry.Outcome
	// streaming is set once a 2xx answer arrived: errors after it come
	// from inside the body.
	streaming bool
	idle      *idle.Guard
}

func (t *callTransport) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	body, err := retry.ReadBody(req)
	if err != nil {
		return nil, err
	}
	resp, err := t.sender().Send(ctx, req, body, &t.outcome)
	if err != nil || resp.StatusCode/100 != 2 {
		return resp, err
	}
	t.streaming = true
	resp.Body = idle.CloseOnDone(ctx, resp.Body)
	return resp, nil
}

// sender sends the invocation's request: a 429, 5xx or 529 is retried
// unless the server says otherwise with X-Should-Retry.
func (t *callTransport) sender() *retry.Sender {
	return &retry.Sender{
		Client: t.p.core.HTTPClient, MaxRetries: t.p.core.MaxRetries, Plan: t.p.core.Plan(retryBase, retryCap), Now: t.p.core.Now,
		Idle: t.idle, IdleHeaders: true,
		Delay: func(h http.Header, now time.Time, _ int) (time.Duration, bool) { return retryDelay(h, now) },
		Retry: func(resp *http.Response, _ []byte) bool {
			switch strings.ToLower(resp.Header.Get("X-Should-Retry")) {
			case "true":
				return true
			case "false":
				return false
			}
			return retry.Retryable(resp.StatusCode)
		},
	}
}

// retryDelay reads how long the server asked to wait: retry-after-ms, then
// retry-after in seconds or as an HTTP date, then the latest of the
// anthropic-ratelimit-*-reset times (RFC 3339) whose remaining count is 0.
func retryDelay(h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := retry.After(h, now); ok {
		return d, true
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
