package responses

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/lodeworks/lode/x/provider/internal/idle"
	"github.com/lodeworks/lode/x/provider/internal/retry"
	"github.com/lodeworks/lode/x/provider/openai/internal/wire"
)

// callTransport is the go-openai HTTPDoer of one invocation. It retries 429
// and 5xx answers itself, honouring the server's wait within
// WithMaxRetryWait, and keeps the body of a whole answer, whose items
// go-openai decodes only as far as its own types go.
type callTransport struct {
	p      *Provider
	stream bool

	outcome     retry.Outcome
	contentType string
	// streaming is set once a 2xx answer arrived: errors after it come
	// from inside the body.
	streaming bool
	idle      *idle.Guard
	whole     bytes.Buffer
}

func (t *callTransport) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	body, err := retry.ReadBody(req)
	if err != nil {
		return nil, err
	}
	resp, err := wire.Sender(&t.p.core, t.idle, t.stream, retryDelay).Send(ctx, req, body, &t.outcome)
	if err != nil || resp.StatusCode/100 != 2 {
		return resp, err
	}
	t.streaming = true
	t.contentType = resp.Header.Get("Content-Type")
	if t.stream {
		guarded := &lineGuard{ReadCloser: resp.Body, max: t.p.maxLine}
		resp.Body = idle.CloseOnDone(ctx, newEventFilter(guarded, streamEmptyLimit))
	} else {
		t.whole.Reset()
		resp.Body = idle.CloseOnDone(ctx, wire.Tee(resp.Body, &t.whole))
	}
	return resp, nil
}

// retryDelay reads how long the server asked to wait: retry-after-ms, then
// Retry-After in seconds or as a date, then, on a 429, the longest of
// OpenAI's x-ratelimit-reset-requests and -tokens (durations such as
// "1s" or "6m0s") whose remaining count is 0.
func retryDelay(h http.Header, now time.Time, status int) (time.Duration, bool) {
	if d, ok := retry.After(h, now); ok {
		return d, true
	}
	if status != http.StatusTooManyRequests {
		return 0, false
	}
	var wait time.Duration
	found := false
	for _, kind := range [...]string{"requests", "tokens"} {
		v := strings.TrimSpace(h.Get("X-Ratelimit-Reset-" + kind))
		if v == "" {
			continue
		}
		if rem := strings.TrimSpace(h.Get("X-Ratelimit-Remaining-" + kind)); rem != "" && rem != "0" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			continue
		}
		found = true
		wait = max(wait, d)
	}
	return wait, found
}

// DefaultMaxLine bounds one line of a stream. go-openai reads a line whole
// whatever its length; the longest real line, response.completed with the
// whole output, stays far below it.
const DefaultMaxLine = 64 << 20

// errLineTooLong is what lineGuard's Read returns past the bound.
var errLineTooLong = errors.New("responses: a line of the stream is too long")

// lineGuard fails a stream body whose current line grows past max bytes.
type lineGuard struct {
	io.ReadCloser
	max, line int
}

func (g *lineGuard) Read(p []byte) (int, error) {
	n, err := g.ReadCloser.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		g.line = n - i - 1
	} else {
		g.line += n
	}
	if g.line > g.max {
		return n, errLineTooLong
	}
	return n, err
}
