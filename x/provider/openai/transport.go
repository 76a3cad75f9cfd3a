package openai

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lodeworks/lode/x/provider/internal/idle"
	"github.com/lodeworks/lode/x/provider/internal/retry"
	"github.com/lodeworks/lode/x/provider/openai/internal/wire"
)

// callTransport is the go-openai HTTPDoer of one invocation. It adds what
// go-openai cannot express to the body, retries 429 and 5xx answers, and
// watches a stream for its closing "data: [DONE]", which go-openai reports
// exactly like a connection that just ended.
type callTransport struct {
	p      *Provider
	patch  []byte
	edits  *bodyEdits
	stream bool

	outcome     retry.Outcome
	contentType string
	watch       *doneWatcher
	idle        *idle.Guard
	// whole is the body of a whole answer as read, for the fields
	// go-openai's types leave out.
	whole bytes.Buffer
}

// maxErrorBody bounds what is read of a failed response.
const maxErrorBody = retry.MaxErrorBody

func (t *callTransport) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	body, err := retry.ReadBody(req)
	if err != nil {
		return nil, err
	}
	// go-openai always writes "model" first, so a member followed by a
	// comma can go right after the brace.
	if body, err = t.p.withModel(body, t.patch); err != nil {
		return nil, err
	}
	if t.edits != nil && !t.edits.empty() {
		b, err := t.edits.apply(body)
		if err != nil {
			return nil, err
		}
		body = b
	}
	resp, err := wire.Sender(&t.p.core, t.idle, t.stream, retryDelay).Send(ctx, req, body, &t.outcome)
	if err != nil || resp.StatusCode/100 != 2 {
		// A refusal was read, bounded, and closed: go-openai reads an
		// error body whole and, on the streaming path, never closes it.
		return resp, err
	}
	if t.stream {
		t.contentType = resp.Header.Get("Content-Type")
		t.watch = &doneWatcher{rc: resp.Body}
		resp.Body = t.watch
	} else {
		// The stream path closes its body on cancellation itself.
		t.whole.Reset()
		resp.Body = idle.CloseOnDone(ctx, wire.Tee(resp.Body, &t.whole))
	}
	return resp, nil
}

// blankModel is how go-openai's body begins for a request with no model
// name (see buildRequest).
var blankModel = []byte(`{"model":""`)

// withModel writes the provider's model name into body, where go-openai
// left it empty, and patch, members ending in a comma, right after the
// opening brace: one copy of the body for both.
func (p *Provider) withModel(body, patch []byte) ([]byte, error) {
	if rest, ok := bytes.CutPrefix(body, blankModel); ok {
		out := make([]byte, 0, len(patch)+len(p.modelHead)+len(rest))
		out = append(out, '{')
		out = append(out, patch...)
		out = append(out, p.modelHead[1:]...)
		return append(out, rest...), nil
	}
	// Not go-openai's usual layout: set the member wherever it is.
	e := bodyEdits{top: []member{{"model", p.modelHead[len(`{"model":`):]}}}
	body, err := e.apply(body)
	if err != nil || len(patch) == 0 {
		return body, err
	}
	out := make([]byte, 0, len(body)+len(patch))
	out = append(out, '{')
	out = append(out, patch...)
	return append(out, body[1:]...), nil
}

// retryDelay reads how long the server asked to wait: retry-after-ms, then
// Retry-After in seconds or as an HTTP date, then, on a 429, the
// X-RateLimit-Reset family.
func retryDelay(h http.Header, now time.Time, status int) (time.Duration, bool) {
	if d, ok := retry.After(h, now); ok {
		return d, true
	}
	if status == http.StatusTooManyRequests {
		return rateLimitReset(h, now)
	}
	return 0, false
}

// rateLimitReset reads the X-RateLimit-Reset family: OpenAI and Groq send
// x-ratelimit-reset-requests and -tokens as durations ("1s", "6m0s"),
// others X-RateLimit-Reset as seconds to wait or as a Unix time in seconds
// or milliseconds. A limit whose x-ratelimit-remaining counterpart is above
// zero is not the one that refused; of the others, the longest wait counts,
// so that a retry never comes sooner than every exhausted limit allows.
func rateLimitReset(h http.Header, now time.Time) (time.Duration, bool) {
	var exhausted, longest time.Duration
	var found, foundExhausted bool
	for name, vs := range h {
		lower := strings.ToLower(name)
		suffix, ok := strings.CutPrefix(lower, "x-ratelimit-reset")
		if !ok || len(vs) == 0 {
			continue
		}
		d, ok := resetValue(strings.TrimSpace(vs[0]), now)
		if !ok {
			continue
		}
		found = true
		longest = max(longest, d)
		if rem := strings.TrimSpace(h.Get("X-Ratelimit-Remaining" + suffix)); rem == "" || rem == "0" {
			foundExhausted = true
			exhausted = max(exhausted, d)
		}
	}
	switch {
	case foundExhausted:
		return exhausted, true
	case found:
		return longest, true
	}
	return 0, false
}

func resetValue(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case f < 0:
			return 0, false
		case f >= 1e12: // a Unix time in milliseconds
			return max(time.UnixMilli(int64(f)).Sub(now), 0), true
		case f >= 1e9: // a Unix time in seconds
			return max(time.Unix(int64(f), 0).Sub(now), 0), true
		}
		return retry.Seconds(f), true
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	if at, err := time.Parse(time.RFC3339, v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// doneLineMax is longer than any line "data: [DONE]" can be written as
// that anyone sends; longer lines are not inspected.
const doneLineMax = 32

// doneWatcher passes a stream body through and notes whether a line
// "data: [DONE]" went by. go-openai reads the body ahead of what it has
// returned, but it stops at [DONE], so once it reports the end of the
// stream, a [DONE] seen here is the one it stopped at.
type doneWatcher struct {
	rc   io.ReadCloser
	line [doneLineMax]byte
	n    int
	long bool
	done bool
	read int64
}

func (w *doneWatcher) Read(p []byte) (int, error) {
	n, err := w.rc.Read(p)
	w.read += int64(n)
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.add(b)
			break
		}
		w.add(b[:i])
		w.endLine()
		b = b[i+1:]
	}
	if err != nil {
		w.endLine()
	}
	return n, err
}

func (w *doneWatcher) add(b []byte) {
	if w.long {
		return
	}
	if w.n+len(b) > doneLineMax {
		w.long = true
		return
	}
	w.n += copy(w.line[w.n:], b)
}

func (w *doneWatcher) endLine() {
	if !w.long && isDoneLine(w.line[:w.n]) {
		w.done = true
	}
	w.n, w.long = 0, false
}

func isDoneLine(b []byte) bool {
	b = bytes.TrimSpace(b)
	rest, ok := bytes.CutPrefix(b, []byte("data:"))
	return ok && string(bytes.TrimSpace(rest)) == "[DONE]"
}

func (w *doneWatcher) Close() error { return w.rc.Close() }
