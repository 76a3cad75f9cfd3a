package cassette

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.yaml.in/yaml/v4"
	vcr "gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
)

// capture is one request being recorded. go-vcr reads a response whole
// before it records it; the client is meanwhile given the response as it
// arrives (live), so a stream streams while it is recorded.
type capture struct {
	live  chan *http.Response
	body  *liveBody
	clock *eventClock
	cut   bool
}

func (r *Recorder) record(req *http.Request, body []byte) (*http.Response, error) {
	id := strconv.FormatInt(r.seq.Add(1), 10)
	c := &capture{live: make(chan *http.Response, 1), body: newLiveBody()}
	r.mu.Lock()
	r.pending[id] = c
	r.mu.Unlock()
	out := withBody(req.Context(), req, body)
	out.Header.Set(seqHeader, id)
	done := make(chan error, 1)
	go func() {
		defer r.inFlight.Done()
		resp, err := r.rec.RoundTrip(out)
		if err == nil {
			resp.Body.Close()
		} else {
			err = fmt.Errorf("cassette: recording %s %s into %s: %w", req.Method, req.URL, r.path, err)
		}
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
		c.body.finish(err)
		done <- err
	}()
	select {
	case resp := <-c.live:
		resp.Request = req
		return resp, nil
	case err := <-done:
		select {
		case resp := <-c.live:
			resp.Request = req
			return resp, nil
		default:
		}
		if err == nil {
			err = fmt.Errorf("cassette: recording %s %s into %s: no response", req.Method, req.URL, r.path)
		}
		return nil, err
	}
}

// liveTransport is go-vcr's real transport: it sends the request and hands
// the client a copy of the response that fills as go-vcr reads it.
type liveTransport struct {
	r    *Recorder
	base http.RoundTripper
}

func (t *liveTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	id := req.Header.Get(seqHeader)
	t.r.mu.Lock()
	c := t.r.pending[id]
	t.r.mu.Unlock()
	out := req.Clone(req.Context())
	out.Header.Del(seqHeader)
	resp, err := t.base.RoundTrip(out)
	if err != nil || c == nil {
		return resp, err
	}
	live := new(http.Response)
	*live = *resp
	live.Header = resp.Header.Clone()
	live.Body = c.body
	tap := &tapBody{ctx: req.Context(), c: c, rc: resp.Body, to: c.body}
	if t.r.cfg.timing && isEventStream(resp.Header) {
		c.clock = &eventClock{start: time.Now()}
		tap.clock = c.clock
	}
	resp.Body = tap
	c.live <- live
	return resp, nil
}

// tapBody passes what go-vcr reads on to the client's copy.
type tapBody struct {
	ctx   context.Context
	c     *capture
	rc    io.ReadCloser
	to    *liveBody
	clock *eventClock
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() != nil {
		// The client is done with the response: what came so far is
		// what it saw, and what replay serves.
		b.c.cut = true
		err = io.EOF
	}
	if n > 0 {
		b.to.write(p[:n])
		if b.clock != nil {
			b.clock.see(p[:n])
		}
	}
	return n, err
}

func (b *tapBody) Close() error { return b.rc.Close() }

// captured is go-vcr's after-capture hook: it drops lode's bookkeeping
// header, notes event times when asked to, and scrubs secrets before the
// interaction joins the cassette in memory.
func (r *Recorder) captured(i *vcr.Interaction) error {
	i.Request.Headers = i.Request.Headers.Clone()
	id := i.Request.Headers.Get(seqHeader)
	i.Request.Headers.Del(seqHeader)
	seq, _ := strconv.ParseInt(id, 10, 64)
	r.mu.Lock()
	c := r.pending[id]
	r.order[i] = seq
	r.mu.Unlock()
	if c != nil && c.cut {
		i.Response.Headers = i.Response.Headers.Clone()
		if i.Response.Headers == nil {
			i.Response.Headers = http.Header{}
		}
		i.Response.Headers.Set(cutHeader, "client")
	}
	if r.cfg.timing {
		if c != nil && c.clock != nil && len(c.clock.times) > 0 {
			i.Response.Headers = i.Response.Headers.Clone()
			if i.Response.Headers == nil {
				i.Response.Headers = http.Header{}
			}
			i.Response.Headers.Set(timingHeader, formatTimes(c.clock.times))
		}
	} else {
		i.Response.Duration = 0
	}
	r.learn(i.Request.URL, i.Request.Headers, i.Request.Form)
	r.learnJSON(i.Request.Body)
	r.learnJSON(i.Response.Body)
	r.scrub(i)
	r.scrubValues(i)
	return nil
}

// errClosed is what a read of a closed live body returns.
var errClosed = errors.New("cassette: read on a closed response body")

// liveBody is the client's copy of a response being recorded: it gives
// what has arrived, waits for more, and ends as the recording ends (with
// its error, if recording failed).
type liveBody struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	done   bool
	err    error
	closed bool
}

func newLiveBody() *liveBody {
	b := &liveBody{}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *liveBody) write(p []byte) {
	b.mu.Lock()
	if !b.closed {
		b.buf = append(b.buf, p...)
	}
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *liveBody) finish(err error) {
	b.mu.Lock()
	b.done, b.err = true, err
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *liveBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.buf) == 0 && !b.done && !b.closed {
		b.cond.Wait()
	}
	switch {
	case b.closed:
		return 0, errClosed
	case len(b.buf) > 0:
		n := copy(p, b.buf)
		b.buf = b.buf[n:]
		return n, nil
	case b.err != nil:
		return 0, b.err
	}
	return 0, io.EOF
}

func (b *liveBody) Close() error {
	b.mu.Lock()
	b.closed, b.buf = true, nil
	b.mu.Unlock()
	b.cond.Broadcast()
	return nil
}

// marshal writes the cassette with its interactions in the order their
// requests were made, so that a session that asks the same thing twice
// replays the answers in turn, and recording the same session twice
// writes the same file.
func (r *Recorder) marshal(v any) ([]byte, error) {
	if c, ok := v.(*vcr.Cassette); ok {
		r.mu.Lock()
		sort.SliceStable(c.Interactions, func(a, b int) bool {
			return r.order[c.Interactions[a]] < r.order[c.Interactions[b]]
		})
		r.mu.Unlock()
		for n, it := range c.Interactions {
			it.ID = n
			r.scrubValues(it)
		}
	}
	return yaml.Marshal(v)
}
