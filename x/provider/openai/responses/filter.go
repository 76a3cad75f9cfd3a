package responses

import (
	"bytes"
	"io"
)

// eventPrefix starts the SSE lines eventFilter drops.
var eventPrefix = []byte("event:")

// eventFilter passes a stream body through without its "event:" lines.
// Every event's data names its own type, so they carry nothing; and
// go-openai keeps every line that is not data until the stream ends, which
// for the Responses API's one event line per event is memory growing with
// the answer. After limit event lines in a row with nothing else between
// them it drops no more, so that go-openai's own bound on lines that are not
// data still stops a server that sends nothing else.
type eventFilter struct {
	io.ReadCloser
	limit   int
	buf     []byte
	out     []byte // filtered; out[off:] is not yet returned
	off     int
	head    []byte // the start of a line not yet known to be an event line
	mid     bool   // inside a line that passes
	drop    bool   // inside a line that is dropped
	dropped int    // event lines dropped in a row
	err     error
}

func newEventFilter(rc io.ReadCloser, limit int) *eventFilter {
	return &eventFilter{ReadCloser: rc, limit: limit, buf: make([]byte, 32<<10)}
}

func (f *eventFilter) Read(p []byte) (int, error) {
	for f.off == len(f.out) {
		if f.err != nil {
			return 0, f.err
		}
		f.out, f.off = f.out[:0], 0
		n, err := f.ReadCloser.Read(f.buf)
		f.filter(f.buf[:n])
		if err != nil {
			// A line cut short by the end passes as it came.
			f.out = append(f.out, f.head...)
			f.head = f.head[:0]
			f.err = err
		}
	}
	n := copy(p, f.out[f.off:])
	f.off += n
	return n, nil
}

// filter appends to out what of chunk passes.
func (f *eventFilter) filter(chunk []byte) {
	for len(chunk) > 0 {
		switch {
		case f.drop:
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				return
			}
			chunk, f.drop = chunk[i+1:], false
		case f.mid:
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				f.out = append(f.out, chunk...)
				return
			}
			f.out = append(f.out, chunk[:i+1]...)
			chunk, f.mid = chunk[i+1:], false
		default:
			// At the start of a line: take bytes until it is known
			// whether the line is an event line.
			k := min(len(eventPrefix)-len(f.head), len(chunk))
			if i := bytes.IndexByte(chunk[:k], '\n'); i >= 0 {
				k = i + 1
			}
			f.head = append(f.head, chunk[:k]...)
			chunk = chunk[k:]
			switch {
			case f.head[len(f.head)-1] == '\n':
				// A short line, or a blank one: it passes whole.
				f.out = append(f.out, f.head...)
				if len(f.head) > 1 && !bytes.Equal(f.head, []byte("\r\n")) {
					f.dropped = 0
				}
			case !bytes.HasPrefix(eventPrefix, f.head):
				f.out = append(f.out, f.head...)
				f.mid, f.dropped = true, 0
			case len(f.head) < len(eventPrefix):
				continue // not known yet
			case f.dropped < f.limit:
				f.drop = true
				f.dropped++
			default:
				f.out = append(f.out, f.head...)
				f.mid = true
			}
			f.head = f.head[:0]
		}
	}
}
