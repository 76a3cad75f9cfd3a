package cassette

import (
	"net/http"
	"time"
)

// Clock returns the time as the server that answers sees it, for code
// that judges what a server said by the time (an Anthropic code execution
// container's expiry, a Retry-After given as a date: anthropic's
// WithClock). Recording, that is time.Now. Replaying, it is the Date of
// the newest response the cassette has served, and before the first the
// earliest Date it holds: a session replayed long after it was recorded
// sees the times it saw then, and sends the requests it sent then. A
// cassette without Date headers gives time.Now.
func (r *Recorder) Clock() func() time.Time {
	if r.cfg.mode != Replay {
		return time.Now
	}
	return func() time.Time {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.served.IsZero() {
			r.served = r.earliestDate()
		}
		if r.served.IsZero() {
			return time.Now()
		}
		return r.served
	}
}

// serve notes the Date of a replayed response for Clock; r.mu is not
// held.
func (r *Recorder) serve(h http.Header) {
	t, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return
	}
	r.mu.Lock()
	if t.After(r.served) {
		r.served = t
	}
	r.mu.Unlock()
}

// earliestDate is the earliest Date of the cassette's responses, zero for
// none; r.mu is held.
func (r *Recorder) earliestDate() time.Time {
	var first time.Time
	if r.tape == nil {
		return first
	}
	for _, it := range r.tape.Interactions {
		if t, err := http.ParseTime(it.Response.Headers.Get("Date")); err == nil && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}
