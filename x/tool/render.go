package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	toolpkg "github.com/lodeworks/lode/tool"
)

// The bounds on what the model sees of one result unless the handler or the
// tool says otherwise.
const (
	DefaultBudgetBytes = 32 << 10
	DefaultBudgetLines = 1000
)

// render turns what a tool returned into the text a model reads. Strings
// go as they are; everything else is JSON.
func render(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []byte:
		if utf8.Valid(v) {
			return string(v), nil
		}
	case json.RawMessage:
		if !json.Valid(v) {
			return "", fmt.Errorf("the tool returned invalid JSON")
		}
		var buf bytes.Buffer
		_ = json.Compact(&buf, v)
		return buf.String(), nil
	case error:
		return v.Error(), nil
	case fmt.Stringer:
		if _, isJSON := v.(json.Marshaler); !isJSON {
			return v.String(), nil
		}
	}
	e := encoders.Get().(*encoder)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		encoders.Put(e)
		return "", err
	}
	out := string(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")))
	if e.buf.Cap() <= maxPooledEncoder {
		encoders.Put(e)
	}
	return out, nil
}

// encoder is a JSON encoder writing to its own buffer, reused across
// results; one that a panic in a MarshalJSON left behind is not.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooledEncoder keeps one huge result from pinning its buffer.
const maxPooledEncoder = 64 << 10

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// resolve fills in the budget's defaults: zero takes the default, negative
// means unlimited.
func resolveBudget(tool, handler toolpkg.Budget) (maxBytes, maxLines int) {
	pick := func(t, h, d int) int {
		switch {
		case t != 0:
			return t
		case h != 0:
			return h
		}
		return d
	}
	return pick(tool.Bytes, handler.Bytes, DefaultBudgetBytes), pick(tool.Lines, handler.Lines, DefaultBudgetLines)
}

// bound keeps the head and tail of s within maxBytes and maxLines (a
// negative limit is none) and puts a marker in the middle saying what was
// cut. It reports whether anything was cut.
func bound(s string, maxBytes, maxLines int) (string, bool) {
	lines := strings.Count(s, "\n") + 1
	overBytes := maxBytes >= 0 && len(s) > maxBytes
	overLines := maxLines >= 0 && lines > maxLines
	if !overBytes && !overLines {
		return s, false
	}
	headEnd, tailStart := len(s), 0
	if overBytes {
		headEnd = runeStart(s, maxBytes/2)
		tailStart = runeStart(s, len(s)-(maxBytes-maxBytes/2))
	}
	if overLines {
		hl := maxLines / 2
		tl := maxLines - hl
		headEnd = min(headEnd, nthLineEnd(s, hl))
		tailStart = max(tailStart, nthLineFromEnd(s, tl))
	}
	if tailStart < headEnd {
		tailStart = headEnd
	}
	cut := s[headEnd:tailStart]
	marker := fmt.Sprintf("\n[… lode cut %d of %d bytes (%d of %d lines) here to fit the result budget; the application keeps the whole result — call the tool again with narrower arguments to see this part …]\n",
		len(cut), len(s), strings.Count(cut, "\n"), lines)
	return s[:headEnd] + marker + s[tailStart:], true
}

// runeStart moves i back to the start of the UTF-8 sequence it falls in.
func runeStart(s string, i int) int {
	i = max(0, min(i, len(s)))
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// nthLineEnd returns the index just after the n-th newline (0 for n == 0).
func nthLineEnd(s string, n int) int {
	at := 0
	for range n {
		j := strings.IndexByte(s[at:], '\n')
		if j < 0 {
			return len(s)
		}
		at += j + 1
	}
	return at
}

// nthLineFromEnd returns the start of the last n lines of s.
func nthLineFromEnd(s string, n int) int {
	if n <= 0 {
		return len(s)
	}
	end := len(s)
	for range n {
		j := strings.LastIndexByte(s[:end], '\n')
		if j < 0 {
			return 0
		}
		end = j
	}
	return end + 1
}
