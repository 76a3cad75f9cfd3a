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
	p          *Provider
	extra      []option.RequestOption
	attempts   int
	retryAfter time.Duration
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
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := retry.Clone(ctx, req, body)
		t.idle.Arm()
		resp, err := t.p.httpc.Do(r)
		t.idle.Disarm()
		t.attempts = attempt + 1
		if err != nil {
			return nil, err
		}
		if resp.StatusCode/100 == 2 {
			t.streaming = true
			resp.Body = idle.CloseOnDone(ctx, t.idle.Body(resp.Body))
			return resp, nil
		}
		retry.Drain(resp)
		wait, asked := retryDelay(resp.Header, t.p.now())
		if asked {
			t.retryAfter = wait
		}
		should := retry.Retryable(resp.StatusCode)
		switch strings.ToLower(resp.Header.Get("X-Should-Retry")) {
		case "true":
			should = true
		case "false":
			should = false
		}
		if !should || attempt >= t.p.maxRetries {
			return resp, nil
		}
		again, err := t.plan().Wait(ctx, attempt, resp.StatusCode, wait, asked)
		if err != nil {
			return nil, err
		}
		if !again {
			return resp, nil
		}
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

func (t *callTransport) plan() retry.Plan {
	return retry.Plan{Base: retryBase, Cap: retryCap, MaxWait: t.p.maxRetryWait, Trace: t.p.tracer != nil, Sleep: t.p.sleep}
}
