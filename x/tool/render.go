package tool

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/internal/structjson"
	toolpkg "github.com/lodeworks/lode/tool"
)

// The bounds on what the model sees of one result unless the handler or the
// tool says otherwise.
const (
	DefaultBudgetBytes = 32 << 10
	DefaultBudgetLines = 1000
)

// DefaultMaxFullBytes is how much of a cut result ToolResult.Full keeps
// unless the handler says otherwise (see WithMaxFullBytes).
const DefaultMaxFullBytes = 1 << 20

// DefaultFullLimit is DefaultMaxFullBytes.
//
// Deprecated: use DefaultMaxFullBytes.
const DefaultFullLimit = DefaultMaxFullBytes

// render turns what a tool returned into the text a model reads. Strings
// go as they are; everything else is JSON, a plain struct through plain's
// compiled encoders when plain is not nil (see renderPlain).
func render(v any, plain *structjson.Encoders) (string, error) {
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
	if s, ok := renderPlain(v, plain); ok {
		return s, nil
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

// resolveFullLimit: zero takes the default, negative means unlimited.
func resolveFullLimit(n int) int {
	if n == 0 {
		return DefaultMaxFullBytes
	}
	return n
}

// cutToBudget bounds text as bound does and decides what Full keeps: the
// whole text when it was cut and fits fullLimit (negative: no limit),
// nothing otherwise, and then the marker says so.
func cutToBudget(text string, maxBytes, maxLines, fullLimit int) (content string, truncated bool, full string) {
	kept := fullLimit < 0 || len(text) <= fullLimit
	content, truncated = boundKept(text, maxBytes, maxLines, kept)
	if truncated && kept {
		full = text
	}
	return content, truncated, full
}

// bound keeps the head and tail of s within maxBytes and maxLines (a
// negative limit is none) and puts a marker in the middle saying what was
// cut. It reports whether anything was cut.
func bound(s string, maxBytes, maxLines int) (string, bool) {
	return boundKept(s, maxBytes, maxLines, true)
}

// cutMarker says what was cut; kept tells whether Full holds the whole.
func cutMarker(cut, total, cutLines, lines int, kept bool) string {
	where := "the application keeps the whole result"
	if !kept {
		where = "the whole result was too large to keep"
	}
	return fmt.Sprintf("\n[… lode cut %d of %d bytes (%d of %d lines) here to fit the result budget; %s — call the tool again with narrower arguments to see this part …]\n",
		cut, total, cutLines, lines, where)
}

func boundKept(s string, maxBytes, maxLines int, kept bool) (string, bool) {
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
	marker := cutMarker(len(cut), len(s), strings.Count(cut, "\n"), lines, kept)
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

// renderTo renders v, what a tool returned, into res.Content. Maps and
// slices of any size stream, element by element, into a writer that keeps
// only what the budget shows (and what Full may keep), so memory stays
// near those limits rather than near the result's size; such a result
// leaves here already bounded. Anything else is rendered whole, and
// Execute bounds it.
func (h *Handler) renderTo(res *artifact.ToolResult, v any, budget toolpkg.Budget) error {
	maxBytes, maxLines := resolveBudget(budget, h.budget)
	if maxBytes < 0 || !streams(v) {
		var err error
		res.Content, err = render(v, &h.plain)
		return err
	}
	st := streamers.Get().(*streamer)
	st.w.reset(maxBytes, maxLines, resolveFullLimit(h.fullLimit))
	if err := st.value(v, 0); err != nil {
		st.release()
		return err
	}
	res.Content, res.Truncated, res.Full = st.w.result()
	st.release()
	return nil
}

// renderPlain encodes v, which render did not take as text, when it is a
// plain struct (see structjson), with the very bytes encoding/json would
// write, and reports whether it did. A nil plain takes nothing.
func renderPlain(v any, plain *structjson.Encoders) (string, bool) {
	if plain == nil {
		return "", false
	}
	enc := plain.For(reflect.TypeOf(v))
	if enc == nil {
		return "", false
	}
	bp := plainBufs.Get().(*[]byte)
	b, ok := enc.Append((*bp)[:0], reflect.ValueOf(v))
	var s string
	if ok {
		s = string(b)
	}
	if cap(b) <= maxPooledEncoder {
		*bp = b
	}
	plainBufs.Put(bp)
	return s, ok
}

// plainBufs are renderPlain's buffers, reused across results as encoders
// are.
var plainBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// streamers are reused across results, as encoders are; one that a panic
// in a MarshalJSON left behind is not.
var streamers = sync.Pool{New: func() any {
	s := new(streamer)
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s
}}

// release returns s to the pool unless it holds a large buffer, dropping
// the keys it holds so that the pool pins none of the caller's values.
func (s *streamer) release() {
	for _, k := range s.keys {
		clear(k[:cap(k)])
	}
	if s.buf.Cap() > maxPooledEncoder || cap(s.w.all) > maxPooledEncoder {
		return
	}
	streamers.Put(s)
}

// maxWalkDepth is how deep streaming walks nested maps and slices before it
// hands the rest to encoding/json whole, which also detects cycles.
const maxWalkDepth = 32

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// streams reports whether v is rendered as JSON (see render) and is a map
// or slice that can be encoded element by element with the very bytes
// encoding/json gives for the whole.
func streams(v any) bool {
	switch v.(type) {
	case nil, string, []byte, json.RawMessage, error, fmt.Stringer:
		return false
	}
	return walkable(reflect.TypeOf(v))
}

// walkable reports whether encoding/json encodes values of t as an array
// of its elements or an object of string keys, with no method of t's own
// deciding.
func walkable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // base64, or the elements' own methods
			return false
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return false
		}
	default:
		return false
	}
	pt := reflect.PointerTo(t)
	return !pt.Implements(jsonMarshaler) && !pt.Implements(textMarshaler)
}

// streamer writes a value's JSON to w as encoding/json would write it
// whole (sorted keys, HTML unescaped), one leaf at a time; invalid UTF-8
// becomes U+FFFD as Execute would make it, which is exact leaf by leaf
// since leaves begin and end in ASCII. The common shapes, []any and
// map[string]any, are walked without reflection and without allocating,
// and their plain strings, ints and floats are written without
// encoding/json.
type streamer struct {
	w    clipWriter
	buf  bytes.Buffer
	enc  *json.Encoder
	keys [][]string // per depth, reused across the maps met there
	num  []byte     // scratch for numbers
}

func (s *streamer) value(v any, depth int) error {
	if depth >= maxWalkDepth {
		return s.leaf(v)
	}
	boxed := v // for leaf, which boxing v again would copy
	switch v := v.(type) {
	case []any:
		if v == nil {
			s.w.WriteString("null")
			return nil
		}
		s.w.WriteString("[")
		for i, e := range v {
			if i > 0 {
				s.w.WriteString(",")
			}
			if err := s.value(e, depth+1); err != nil {
				return err
			}
		}
		s.w.WriteString("]")
		return nil
	case map[string]any:
		if v == nil {
			s.w.WriteString("null")
			return nil
		}
		for len(s.keys) <= depth {
			s.keys = append(s.keys, nil)
		}
		keys := s.keys[depth][:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		s.keys[depth] = keys
		s.w.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				s.w.WriteString(",")
			}
			if err := s.key(k); err != nil {
				return err
			}
			if err := s.value(v[k], depth+1); err != nil {
				return err
			}
		}
		s.w.WriteString("}")
		return nil
	case nil:
		s.w.WriteString("null")
		return nil
	case string:
		if plain(v) {
			s.w.WriteString(`"`)
			s.w.WriteString(v)
			s.w.WriteString(`"`)
			return nil
		}
		return s.leaf(boxed)
	case bool:
		s.w.WriteString(strconv.FormatBool(v))
		return nil
	case int:
		s.num = strconv.AppendInt(s.num[:0], int64(v), 10)
		s.w.Write(s.num)
		return nil
	case int64:
		s.num = strconv.AppendInt(s.num[:0], v, 10)
		s.w.Write(s.num)
		return nil
	case float64:
		// encoding/json's own format in the range where it is plain 'f'.
		if a := math.Abs(v); a == 0 || a >= 1e-6 && a < 1e21 {
			s.num = strconv.AppendFloat(s.num[:0], v, 'f', -1, 64)
			s.w.Write(s.num)
			return nil
		}
		return s.leaf(boxed)
	}
	rv := reflect.ValueOf(v)
	if !walkable(rv.Type()) {
		return s.leaf(v)
	}
	return s.reflected(rv, depth)
}

// reflected walks a map or slice of another type than value's two; v is
// walkable.
func (s *streamer) reflected(v reflect.Value, depth int) error {
	if v.IsNil() {
		s.w.WriteString("null")
		return nil
	}
	elem := func(e reflect.Value) error {
		switch {
		case e.Kind() == reflect.Interface:
			return s.value(e.Interface(), depth+1)
		case depth+1 < maxWalkDepth && walkable(e.Type()):
			return s.reflected(e, depth+1)
		case e.CanAddr(): // an element of a slice: its pointer methods count
			return s.leaf(e.Addr().Interface())
		}
		return s.leaf(e.Interface())
	}
	if v.Kind() == reflect.Slice {
		s.w.WriteString("[")
		for i := range v.Len() {
			if i > 0 {
				s.w.WriteString(",")
			}
			if err := elem(v.Index(i)); err != nil {
				return err
			}
		}
		s.w.WriteString("]")
		return nil
	}
	keys := v.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.String(), b.String()) })
	s.w.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			s.w.WriteString(",")
		}
		if err := s.key(k.String()); err != nil {
			return err
		}
		if err := elem(v.MapIndex(k)); err != nil {
			return err
		}
	}
	s.w.WriteString("}")
	return nil
}

// key writes an object's key and its colon. A key of plain ASCII, as most
// are, is written as it is, which is what encoding/json writes for it.
func (s *streamer) key(k string) error {
	if !plain(k) {
		if err := s.leaf(k); err != nil {
			return err
		}
		s.w.WriteString(":")
		return nil
	}
	s.w.WriteString(`"`)
	s.w.WriteString(k)
	s.w.WriteString(`":`)
	return nil
}

// plain reports whether encoding/json quotes s as it is: printable ASCII
// with no quote or backslash.
func plain(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// leaf encodes one value whole.
func (s *streamer) leaf(v any) error {
	s.buf.Reset()
	if err := s.enc.Encode(v); err != nil {
		return err
	}
	b := bytes.TrimSuffix(s.buf.Bytes(), []byte("\n"))
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	s.w.Write(b)
	return nil
}

// clipWriter takes a rendering as it is written and keeps what bound
// would show of it. While the text fits keep, it keeps all of it; past
// that it keeps only the first half of the byte budget (and a byte more,
// to find where a character starts), a ring of the last half (and a few
// bytes more), and counts bytes and lines.
type clipWriter struct {
	maxBytes, maxLines, fullLimit int
	keep                          int // at least maxBytes+8, so head and tail never overlap past it; -1: all

	all  []byte // everything, while it fits keep
	over bool   // past keep: head and ring only
	head []byte
	ring []byte // the last len(ring) bytes, oldest at ring[at]
	at   int

	n, newlines int
}

// reset readies w for a new text, keeping the memory of all.
func (w *clipWriter) reset(maxBytes, maxLines, fullLimit int) {
	keep := maxBytes + 8
	if fullLimit < 0 {
		keep = -1
	} else {
		keep = max(keep, fullLimit)
	}
	*w = clipWriter{maxBytes: maxBytes, maxLines: maxLines, fullLimit: fullLimit, keep: keep, all: w.all[:0]}
}

func (w *clipWriter) WriteString(s string) { write(w, s) }

func (w *clipWriter) Write(p []byte) { write(w, p) }

// write is Write for strings and byte slices alike, so that no string is
// copied to be written.
func write[T string | []byte](w *clipWriter, p T) {
	w.n += len(p)
	for i := range len(p) {
		if p[i] == '\n' {
			w.newlines++
		}
	}
	if w.over {
		push(w, p)
		return
	}
	if need := len(w.all) + len(p); w.keep < 0 || need <= w.keep {
		if need > cap(w.all) {
			// Doubling, and straight to keep once past half of it,
			// allocates about twice what is kept where append's growth
			// would allocate five times.
			size := max(need, 2*cap(w.all), 512)
			if w.keep >= 0 && size > w.keep/2 {
				size = w.keep
			}
			w.all = append(make([]byte, 0, size), w.all...)
		}
		w.all = append(w.all, p...)
		return
	}
	// Past keep: the head and the ring take the memory all already has
	// when it can (cap(all) reaches keep, and keep >= hc+tc).
	w.over = true
	hc, tc := w.maxBytes/2+1, w.maxBytes-w.maxBytes/2+4
	n := len(w.all)
	buf := w.all[:cap(w.all)]
	if len(buf) < hc+tc {
		buf = make([]byte, hc+tc)
		copy(buf, w.all)
	}
	if n < hc { // then p is longer than tc
		copy(buf[n:hc], p)
	}
	w.head, w.ring = buf[:hc:hc], buf[hc:hc+tc:hc+tc]
	if len(p) >= tc {
		copy(w.ring, p[len(p)-tc:])
	} else {
		// The last tc-len(p) bytes of all lie past hc+3, since
		// n+len(p) > keep >= hc+tc+3: copy moves them back safely.
		k := tc - len(p)
		copy(w.ring, buf[n-k:n])
		copy(w.ring[k:], p)
	}
	w.at, w.all = 0, nil
}

// push writes p into the ring.
func push[T string | []byte](w *clipWriter, p T) {
	if len(p) >= len(w.ring) {
		copy(w.ring, p[len(p)-len(w.ring):])
		w.at = 0
		return
	}
	k := copy(w.ring[w.at:], p)
	if k < len(p) {
		w.at = copy(w.ring, p[k:])
	} else if w.at += k; w.at == len(w.ring) {
		w.at = 0
	}
}

// result is what cutToBudget gives for the whole text written.
func (w *clipWriter) result() (content string, truncated bool, full string) {
	if !w.over {
		return cutToBudget(string(w.all), w.maxBytes, w.maxLines, w.fullLimit)
	}
	// Past keep the text is over the byte budget and longer than Full may
	// keep; bound's cut points are found in the head and the ring, which
	// hold every byte they can fall on.
	slices.Reverse(w.ring[:w.at]) // rotate the ring to read in order
	slices.Reverse(w.ring[w.at:])
	slices.Reverse(w.ring)
	head, tail := w.head, w.ring
	headEnd := runeStartBytes(head, w.maxBytes/2)
	tailStart := runeStartBytes(tail, len(tail)-(w.maxBytes-w.maxBytes/2))
	lines := w.newlines + 1
	if w.maxLines >= 0 && lines > w.maxLines {
		hl, tl := w.maxLines/2, w.maxLines-w.maxLines/2
		headEnd = min(headEnd, nthLineEndBytes(head, hl))
		tailStart = max(tailStart, nthLineFromEndBytes(tail, tl))
	}
	head, tail = head[:headEnd], tail[tailStart:]
	cutLines := w.newlines - bytes.Count(head, []byte("\n")) - bytes.Count(tail, []byte("\n"))
	marker := cutMarker(w.n-len(head)-len(tail), w.n, cutLines, lines, false)
	var b strings.Builder
	b.Grow(len(head) + len(marker) + len(tail))
	b.Write(head)
	b.WriteString(marker)
	b.Write(tail)
	return b.String(), true, ""
}

// runeStartBytes, nthLineEndBytes and nthLineFromEndBytes are runeStart,
// nthLineEnd and nthLineFromEnd on the parts clipWriter keeps: on a
// part that holds every byte the cut can fall on, they find the same
// point, and past the part's end (or before its start) where the cut
// point cannot be.
func runeStartBytes(b []byte, i int) int {
	i = max(0, min(i, len(b)))
	for i > 0 && i < len(b) && !utf8.RuneStart(b[i]) {
		i--
	}
	return i
}

func nthLineEndBytes(b []byte, n int) int {
	at := 0
	for range n {
		j := bytes.IndexByte(b[at:], '\n')
		if j < 0 {
			return len(b)
		}
		at += j + 1
	}
	return at
}

func nthLineFromEndBytes(b []byte, n int) int {
	if n <= 0 {
		return len(b)
	}
	end := len(b)
	for range n {
		j := bytes.LastIndexByte(b[:end], '\n')
		if j < 0 {
			return 0
		}
		end = j
	}
	return end + 1
}
