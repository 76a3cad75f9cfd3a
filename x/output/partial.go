package output

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
)

// PartialEvent carries the answer parsed so far while it streams: JSON is
// the text received so far, cut to its last whole member and closed (a
// string still arriving is included as far as it goes; a number, true,
// false or null only once it is whole), and Value is JSON decoded into T,
// its missing fields left zero.
type PartialEvent[T any] struct {
	Value T
	JSON  string
}

// EventName returns "output_partial".
func (PartialEvent[T]) EventName() string { return "output_partial" }

// Partials returns an observer that passes every event on to next and,
// after each text delta that changes the answer parsed so far, a
// PartialEvent[T]: give it to loop.WithObserver for a UI that shows the
// answer filling in. Text that does not start as a JSON object or array
// gives no partial values. A completed turn or an error starts the next
// answer afresh. It keeps the text of the answer in flight, so it belongs
// to one Step running one thread at a time.
func Partials[T any](next loop.Emitter) loop.Emitter {
	return &partials[T]{next: next}
}

type partials[T any] struct {
	next loop.Emitter
	mu   sync.Mutex
	buf  strings.Builder
	last string
}

func (p *partials[T]) Emit(ctx context.Context, ev loop.Event) {
	if p.next != nil {
		p.next.Emit(ctx, ev)
	}
	var out *PartialEvent[T]
	p.mu.Lock()
	switch e := ev.(type) {
	case loop.DeltaEvent:
		if d, ok := e.Delta.(artifact.TextDelta); ok && d.Content != "" {
			p.buf.WriteString(d.Content)
			out = p.parse()
		}
	case loop.TurnCompleteEvent, *loop.TurnCompleteEvent, loop.ErrorEvent, *loop.ErrorEvent:
		p.buf.Reset()
		p.last = ""
	}
	p.mu.Unlock()
	if out != nil && p.next != nil {
		p.next.Emit(ctx, *out)
	}
}

func (p *partials[T]) parse() *PartialEvent[T] {
	doc, ok := closeJSON(p.buf.String())
	if !ok || doc == p.last {
		return nil
	}
	var v T
	if json.Unmarshal([]byte(doc), &v) != nil {
		return nil
	}
	p.last = doc
	return &PartialEvent[T]{Value: v, JSON: doc}
}

// closeJSON returns the longest usable document in s, a prefix of a JSON
// object or array: what arrived, less an unfinished key, number or literal
// and a trailing comma, with every open string, array and object closed.
// It reports false when s does not start as an object or array, or is not
// JSON as far as it goes.
func closeJSON(s string) (string, bool) {
	c := closer{s: s}
	c.ws()
	if c.eof() || (s[c.i] != '{' && s[c.i] != '[') {
		return "", false
	}
	if _, _, ok := c.value(); !ok {
		return "", false
	}
	if !json.Valid(c.out) {
		return "", false
	}
	return string(c.out), true
}

type closer struct {
	s   string
	i   int
	out []byte
}

func (c *closer) eof() bool { return c.i >= len(c.s) }

func (c *closer) ws() {
	for !c.eof() {
		switch c.s[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// value reads one value. done reports that it was whole; usable that
// something stands for it in out; ok is false for text that is not JSON.
func (c *closer) value() (done, usable, ok bool) {
	c.ws()
	if c.eof() {
		return false, false, true
	}
	switch c.s[c.i] {
	case '{':
		return c.container('{', '}')
	case '[':
		return c.container('[', ']')
	case '"':
		return c.str()
	}
	return c.scalar()
}

func (c *closer) container(open, end byte) (done, usable, ok bool) {
	c.i++
	c.out = append(c.out, open)
	c.ws()
	if !c.eof() && c.s[c.i] == end {
		c.i++
		c.out = append(c.out, end)
		return true, true, true
	}
	for first := true; ; first = false {
		c.ws()
		if c.eof() {
			break
		}
		mark := len(c.out)
		if !first {
			c.out = append(c.out, ',')
		}
		if open == '{' {
			if c.s[c.i] != '"' {
				return false, false, false
			}
			kdone, _, kok := c.str()
			if !kok {
				return false, false, false
			}
			c.ws()
			if !kdone || c.eof() {
				c.out = c.out[:mark]
				break
			}
			if c.s[c.i] != ':' {
				return false, false, false
			}
			c.i++
			c.out = append(c.out, ':')
		}
		vdone, vusable, vok := c.value()
		if !vok {
			return false, false, false
		}
		if !vdone {
			if !vusable {
				c.out = c.out[:mark]
			}
			break
		}
		c.ws()
		if c.eof() {
			break
		}
		switch c.s[c.i] {
		case ',':
			c.i++
			continue
		case end:
			c.i++
			c.out = append(c.out, end)
			return true, true, true
		}
		return false, false, false
	}
	c.out = append(c.out, end)
	return false, true, true
}

// str reads a string. One still arriving is closed after its last whole
// character: an escape or a UTF-8 sequence cut short is left out, and so is
// the first half of a surrogate pair.
func (c *closer) str() (done, usable, ok bool) {
	start := c.i
	j := c.i + 1
	end := -1 // where a string still arriving is cut
	lastEsc, lastEscEnd := -1, -1
	for end < 0 && j < len(c.s) {
		switch c.s[j] {
		case '"':
			c.out = append(c.out, c.s[start:j+1]...)
			c.i = j + 1
			return true, true, true
		case '\\':
			n := 2
			if j+1 < len(c.s) && c.s[j+1] == 'u' {
				n = 6
			}
			if j+n > len(c.s) {
				end = j
				break
			}
			lastEsc, lastEscEnd = j, j+n
			j += n
		default:
			j++
		}
	}
	if end < 0 {
		end = len(c.s)
	}
	if lastEscEnd == end && end-lastEsc == 6 && highSurrogate(c.s[lastEsc+2:end]) {
		end = lastEsc
	}
	content := c.s[start+1 : end]
	// Leave out a UTF-8 sequence cut short.
	for k := len(content) - 1; k >= 0 && k >= len(content)-utf8.UTFMax; k-- {
		if utf8.RuneStart(content[k]) {
			if !utf8.FullRuneInString(content[k:]) {
				content = content[:k]
			}
			break
		}
	}
	c.out = append(c.out, '"')
	c.out = append(c.out, content...)
	c.out = append(c.out, '"')
	c.i = len(c.s)
	return false, true, true
}

func highSurrogate(hex string) bool {
	h := strings.ToLower(hex)
	return len(h) == 4 && h[0] == 'd' && h[1] >= '8' && h[1] <= 'b'
}

// scalar reads a number, true, false or null; one that reaches the end of
// the text may not be whole, and is left out.
func (c *closer) scalar() (done, usable, ok bool) {
	j := c.i
	for j < len(c.s) && strings.IndexByte("+-0123456789.eEtruefalsn", c.s[j]) >= 0 {
		j++
	}
	if j == c.i {
		return false, false, false
	}
	if j == len(c.s) {
		c.i = j
		return false, false, true
	}
	c.out = append(c.out, c.s[c.i:j]...)
	c.i = j
	return true, true, true
}
