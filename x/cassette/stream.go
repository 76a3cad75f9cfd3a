package cassette

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// splitEvents cuts an event-stream body after each blank line, so each
// piece is one event as the server sent it; what follows the last blank
// line is a piece of its own.
func splitEvents(body []byte) [][]byte {
	var out [][]byte
	start, pos := 0, 0
	content := false
	for pos < len(body) {
		end := bytes.IndexByte(body[pos:], '\n')
		if end < 0 {
			break
		}
		line := body[pos : pos+end]
		pos += end + 1
		if len(bytes.TrimRight(line, "\r")) == 0 {
			if content {
				out = append(out, body[start:pos])
				start, content = pos, false
			}
			continue
		}
		content = true
	}
	if start < len(body) {
		out = append(out, body[start:])
	}
	return out
}

// eventBody serves an event stream one event per Read, as the server
// delivered it, and with times given, each no sooner than it came then.
type eventBody struct {
	ctx    context.Context
	events [][]byte
	times  []time.Duration
	start  time.Time

	mu     sync.Mutex
	cur    int
	off    int
	closed bool
}

func newEventBody(ctx context.Context, body []byte, times []time.Duration) *eventBody {
	return &eventBody{ctx: ctx, events: splitEvents(body), times: times, start: time.Now()}
}

func (b *eventBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.cur >= len(b.events) {
		return 0, io.EOF
	}
	if b.off == 0 && b.cur < len(b.times) {
		if wait := time.Until(b.start.Add(b.times[b.cur])); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-b.ctx.Done():
				t.Stop()
				return 0, b.ctx.Err()
			}
		}
	}
	ev := b.events[b.cur]
	n := copy(p, ev[b.off:])
	b.off += n
	if b.off == len(ev) {
		b.cur, b.off = b.cur+1, 0
	}
	return n, nil
}

func (b *eventBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

func formatTimes(ts []time.Duration) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = strconv.FormatInt(t.Milliseconds(), 10)
	}
	return strings.Join(parts, ",")
}

// parseTimes reads formatTimes; anything unreadable means no timing.
func parseTimes(s string) []time.Duration {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	out := make([]time.Duration, len(parts))
	for i, p := range parts {
		ms, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || ms < 0 {
			return nil
		}
		out[i] = time.Duration(ms) * time.Millisecond
	}
	return out
}

// eventClock notes when each event of a stream has fully arrived.
type eventClock struct {
	start   time.Time
	content bool // the current line has content
	event   bool // the current event has a line with content
	times   []time.Duration
}

func (c *eventClock) see(p []byte) {
	for _, ch := range p {
		switch ch {
		case '\r':
		case '\n':
			if !c.content && c.event {
				c.times = append(c.times, time.Since(c.start))
				c.event = false
			}
			c.content = false
		default:
			c.content, c.event = true, true
		}
	}
}
