package cassette

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
)

// bodyKey carries a request as matching sees it to the matcher.
type bodyKey struct{}

// liveKey is a request as matching sees it: scrubbed as its recording
// was, so that a secret in its URL or body compares equal to Redacted.
type liveKey struct {
	url  string
	body *normBody
}

func (r *Recorder) replay(req *http.Request, body []byte) (*http.Response, error) {
	ct := req.Header.Get("Content-Type")
	u := req.URL.String()
	r.learn(u, req.Header, formOf(u, ct, string(body)))
	r.learnJSON(string(body))
	key := &liveKey{
		url:  r.scrubURL(u),
		body: normalise([]byte(r.scrubRequestBody(ct, string(body))), r.cfg.scrubFields),
	}
	ctx := context.WithValue(req.Context(), bodyKey{}, key)
	resp, err := r.rec.RoundTrip(withBody(ctx, req, body))
	if err != nil {
		if errors.Is(err, vcr.ErrInteractionNotFound) {
			return nil, r.miss(req.Method, key)
		}
		return nil, fmt.Errorf("cassette: %s: %w", r.path, err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("cassette: %s: %w", r.path, err)
	}
	resp.Request = req
	resp.Header = resp.Header.Clone()
	r.serve(resp.Header)
	times := parseTimes(resp.Header.Get(timingHeader))
	resp.Header.Del(timingHeader)
	cut := resp.Header.Get(cutHeader) != ""
	resp.Header.Del(cutHeader)
	if resp.ContentLength >= 0 {
		resp.ContentLength = int64(len(data))
		if resp.Header.Get("Content-Length") != "" {
			resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
		}
	}
	if !r.cfg.timing {
		times = nil
	}
	if isEventStream(resp.Header) {
		resp.Body = newEventBody(req.Context(), data, times)
	} else {
		resp.Body = io.NopCloser(bytes.NewReader(data))
	}
	if cut {
		resp.Body = &heldBody{rc: resp.Body, ctx: req.Context(), closed: make(chan struct{})}
	}
	return resp, nil
}

// match is go-vcr's matcher: method, URL and normalised body.
func (r *Recorder) match(req *http.Request, rec vcr.Request) bool {
	key, _ := req.Context().Value(bodyKey{}).(*liveKey)
	if key == nil {
		key = &liveKey{url: req.URL.String(), body: normalise(nil, nil)}
	}
	if req.Method != rec.Method || !sameURL(key.url, rec.URL) {
		return false
	}
	recBody := r.norm.of(rec.Body)
	if key.body.equal(recBody) {
		return true
	}
	// A secret the recording learned only after this request was made
	// is Redacted in the file but unknown to the replay so far.
	return recBody.json && key.body.json && strings.Contains(recBody.canon, Redacted) && redactedMatch(recBody.v, key.body.v)
}

// redactedMatch compares a recorded JSON value with a request's, taking
// each Redacted in a recorded string to stand for any non-empty text.
func redactedMatch(rec, req any) bool {
	switch r := rec.(type) {
	case map[string]any:
		q, ok := req.(map[string]any)
		if !ok || len(q) != len(r) {
			return false
		}
		for k, rv := range r {
			qv, ok := q[k]
			if !ok || !redactedMatch(rv, qv) {
				return false
			}
		}
		return true
	case []any:
		q, ok := req.([]any)
		if !ok || len(q) != len(r) {
			return false
		}
		for i := range r {
			if !redactedMatch(r[i], q[i]) {
				return false
			}
		}
		return true
	case string:
		q, ok := req.(string)
		if !ok {
			return false
		}
		return r == q || strings.Contains(r, Redacted) && patternMatch(strings.Split(r, Redacted), q)
	}
	return reflect.DeepEqual(rec, req)
}

// patternMatch reports s as the parts joined by non-empty gaps.
func patternMatch(parts []string, s string) bool {
	first, last := parts[0], parts[len(parts)-1]
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	for _, p := range parts[1 : len(parts)-1] {
		if s == "" {
			return false
		}
		i := strings.Index(s[1:], p)
		if i < 0 {
			return false
		}
		s = s[1+i+len(p):]
	}
	return len(s) > len(last) && strings.HasSuffix(s, last)
}

// replayed notes which interactions have answered, for miss diagnostics.
func (r *Recorder) replayed(i *vcr.Interaction) error {
	r.mu.Lock()
	r.used[i.ID] = true
	r.mu.Unlock()
	return nil
}

// MissError is a request the cassette holds no answer for. It names the
// recorded interaction closest to the request and their first difference.
type MissError struct {
	Path   string // the cassette file
	Method string // the request's
	URL    string
	// Closest is the id of the nearest recorded interaction, -1 when the
	// cassette holds none.
	Closest       int
	ClosestMethod string
	ClosestURL    string
	// Difference is the first difference from Closest: the method, the
	// URL, or a JSON path in the body with both values.
	Difference string
	// Replayed: Closest matches the request but has answered already;
	// the session made more such requests than were recorded.
	Replayed bool
}

func (e *MissError) Error() string {
	return e.Detail() + "; if the change is meant, record the cassette again with " + EnvRecord + "=1"
}

// Detail is the error without its advice, for a program that records
// cassettes some other way (lode run --record FILE) to add its own.
func (e *MissError) Detail() string {
	msg := fmt.Sprintf("cassette: %s holds no interaction for %s %s", e.Path, e.Method, e.URL)
	switch {
	case e.Closest < 0:
		msg += ": it holds no interactions at all"
	case e.Replayed:
		msg += fmt.Sprintf(": interaction #%d matches but has answered already (the session made more such requests than were recorded)", e.Closest)
	default:
		msg += fmt.Sprintf(": the closest, #%d %s %s, differs at %s", e.Closest, e.ClosestMethod, e.ClosestURL, e.Difference)
	}
	return msg
}

// Is makes a *MissError match ErrNoInteraction.
func (e *MissError) Is(target error) bool { return target == ErrNoInteraction }

// miss finds the recorded interaction closest to a request that matched
// none: the fewest differences, preferring one that has not answered yet.
// The request's URL is given scrubbed, so the error holds no secret.
func (r *Recorder) miss(method string, live *liveKey) error {
	key := live.body
	e := &MissError{Path: r.path, Method: method, URL: live.url, Closest: -1}
	r.mu.Lock()
	used := make(map[int]bool, len(r.used))
	for k, v := range r.used {
		used[k] = v
	}
	r.mu.Unlock()
	const bodyLimit = 1000
	best, bestD := -1, 0
	usedAt := func(idx int) bool { return used[r.tape.Interactions[idx].ID] }
	for idx, it := range r.tape.Interactions {
		rec := r.norm.of(it.Request.Body)
		d := 0
		if it.Request.Method != method {
			d += 100 * bodyLimit
		}
		if !sameURL(it.Request.URL, e.URL) {
			d += 10 * bodyLimit
		}
		switch {
		case rec.json && key.json:
			d += countDiffs(rec.v, key.v, bodyLimit)
		case !rec.equal(key):
			d += bodyLimit
		}
		if best < 0 || d < bestD || (d == bestD && usedAt(best) && !usedAt(idx)) {
			best, bestD = idx, d
		}
	}
	if best < 0 {
		return e
	}
	it := r.tape.Interactions[best]
	e.Closest, e.ClosestMethod, e.ClosestURL = it.ID, it.Request.Method, it.Request.URL
	rec := r.norm.of(it.Request.Body)
	switch {
	case it.Request.Method != method:
		e.Difference = fmt.Sprintf("the method: recorded %s, request %s", it.Request.Method, method)
	case !sameURL(it.Request.URL, e.URL):
		e.Difference = fmt.Sprintf("the URL: recorded %s, request %s", it.Request.URL, e.URL)
	case rec.json && key.json:
		if d, ok := firstDiff("$", rec.v, key.v); ok {
			e.Difference = d
		} else {
			e.Replayed = true
		}
	case rec.json != key.json:
		e.Difference = "the body: recorded " + kind(rec) + ", request " + kind(key)
	case !rec.equal(key):
		e.Difference = bytesDiff(rec.raw, key.raw)
	default:
		e.Replayed = true
	}
	return e
}

func kind(n *normBody) string {
	switch {
	case n.json:
		return "JSON"
	case len(n.raw) == 0:
		return "empty"
	}
	return "not JSON"
}

// heldBody does not end after its last byte: it waits, as the recorded
// server did, until the request's context ends or the body is closed.
type heldBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	once   sync.Once
	closed chan struct{}
}

func (b *heldBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != io.EOF || n > 0 {
		return n, err
	}
	select {
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	case <-b.closed:
		return 0, errClosed
	}
}

func (b *heldBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return b.rc.Close()
}
