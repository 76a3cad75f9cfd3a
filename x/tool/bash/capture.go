package bash

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// capture keeps the head and the tail of a stream, up to limit bytes in
// all, and counts the rest: hundreds of megabytes of output cost no more
// memory than limit.
type capture struct {
	headCap, tailCap int
	head             []byte
	tail             []byte // a ring of tailCap bytes once full
	tpos             int    // next write position in the ring
	tlen             int    // bytes held in the ring
	total            int64
}

func newCapture(limit int) *capture {
	h := limit / 2
	return &capture{headCap: h, tailCap: limit - h}
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || c.tailCap == 0 {
		return n, nil
	}
	if c.tail == nil {
		c.tail = make([]byte, c.tailCap)
	}
	if len(p) >= c.tailCap {
		copy(c.tail, p[len(p)-c.tailCap:])
		c.tpos, c.tlen = 0, c.tailCap
		return n, nil
	}
	for len(p) > 0 {
		k := copy(c.tail[c.tpos:], p)
		c.tpos = (c.tpos + k) % c.tailCap
		c.tlen = min(c.tlen+k, c.tailCap)
		p = p[k:]
	}
	return n, nil
}

// tailBytes returns the ring's content in order.
func (c *capture) tailBytes() []byte {
	if c.tlen < c.tailCap {
		return c.tail[:c.tlen]
	}
	out := make([]byte, 0, c.tailCap)
	out = append(out, c.tail[c.tpos:]...)
	return append(out, c.tail[:c.tpos]...)
}

// cut is how many bytes were dropped between head and tail.
func (c *capture) cut() int64 { return c.total - int64(len(c.head)) - int64(c.tlen) }

// String renders the stream: all of it when it fit, otherwise the head, a
// marker saying how much was cut, and the tail, each cut on a character
// boundary. Invalid UTF-8 is replaced, so the text is always valid.
func (c *capture) String() string {
	tail := c.tailBytes()
	if c.cut() == 0 {
		return strings.ToValidUTF8(string(c.head)+string(tail), "\uFFFD")
	}
	head := c.head
	dropped := c.cut()
	// Move the cuts to character boundaries, counting what that drops.
	for i := 0; i < utf8.UTFMax && len(head) > 0; i++ {
		if r, size := utf8.DecodeLastRune(head); r != utf8.RuneError || size != 1 {
			break
		}
		head = head[:len(head)-1]
		dropped++
	}
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
		dropped++
	}
	return strings.ToValidUTF8(string(head), "\uFFFD") +
		fmt.Sprintf("\n[... %d bytes cut ...]\n", dropped) +
		strings.ToValidUTF8(string(tail), "\uFFFD")
}
