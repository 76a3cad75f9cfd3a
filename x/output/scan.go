package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// maxDepth bounds how deep an answer may nest, as encoding/json does: the
// scanner keeps its own stack, so a deeper answer is refused, not a crash.
const maxDepth = 10000

var (
	errDepth     = fmt.Errorf("output: the answer nests deeper than %d levels", maxDepth)
	errNotJSON   = errors.New("output: the answer is not JSON as far as it goes")
	errNotObject = errors.New("output: the answer does not start as a JSON object or array")
)

// scanner reads an answer as it streams, keeping its state between
// deltas, so each byte is read once. out holds the answer as far as it is
// whole, without whitespace and with its containers still open; doc closes
// a copy of it.
type scanner struct {
	err   error
	stack []frame
	out   []byte
	done  bool // the top-level value is closed; what follows is ignored

	lex   lexState
	isKey bool   // the string being read is a key
	tok   []byte // a key or a scalar being read
	esc   []byte // an escape being read
	held  []byte // a high surrogate waiting for its pair
	hexes int    // hex digits still due in a \u escape

	// The keys of the open objects, innermost last: keyBuf holds them
	// decoded, one after another, and keyEnds where each ends. An object's
	// keys are compared in place until it has many, when a set takes over.
	keyBuf  []byte
	keyEnds []int
}

// manyKeys is how many keys an object holds before a set replaces the
// linear search for a duplicate.
const manyKeys = 16

type lexState uint8

const (
	lexNone lexState = iota
	lexString
	lexEscape
	lexScalar
)

type frameState uint8

const (
	wantFirst      frameState = iota // after the open bracket: a member or the end
	wantMember                       // after a comma
	wantColon                        // after a key
	wantValue                        // after a colon
	wantCommaOrEnd                   // after a member
)

type frame struct {
	obj   bool
	state frameState
	mark  int // len(out) before the member in flight, its comma included

	keysFrom int                 // the object's first key in keyEnds
	bufFrom  int                 // where its keys start in keyBuf
	keys     map[string]struct{} // its keys, once it has many
}

// reset readies s for another answer, keeping its buffers.
func (s *scanner) reset() {
	*s = scanner{stack: s.stack[:0], out: s.out[:0], tok: s.tok[:0], esc: s.esc[:0], held: s.held[:0],
		keyBuf: s.keyBuf[:0], keyEnds: s.keyEnds[:0]}
}

// write scans the next part of the answer. After an error it does nothing.
func (s *scanner) write(p string) {
	for i := 0; i < len(p) && s.err == nil && !s.done; {
		switch s.lex {
		case lexString:
			// Copy a run of plain bytes at once.
			j := i
			for j < len(p) && p[j] != '"' && p[j] != '\\' && p[j] >= 0x20 {
				j++
			}
			if j > i {
				s.flushSurrogate()
				s.strBytes(p[i:j])
				i = j
				continue
			}
			s.strByte(p[i])
		case lexEscape:
			s.escByte(p[i])
		case lexScalar:
			s.scalarByte(p[i])
			if s.lex == lexScalar {
				i++
			}
			continue
		default:
			s.structural(p[i])
		}
		i++
	}
}

func (s *scanner) fail(err error) { s.err = err }

func (s *scanner) top() *frame { return &s.stack[len(s.stack)-1] }

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// structural reads a byte outside any string or scalar.
func (s *scanner) structural(b byte) {
	if isSpace(b) {
		return
	}
	if len(s.stack) == 0 {
		if b != '{' && b != '[' {
			s.fail(errNotObject)
			return
		}
		s.push(b == '{')
		return
	}
	f := s.top()
	switch f.state {
	case wantFirst, wantMember:
		if f.state == wantFirst && (b == '}' && f.obj || b == ']' && !f.obj) {
			s.pop()
			return
		}
		if f.obj {
			if b != '"' {
				s.fail(errNotJSON)
				return
			}
			s.beginMember(f)
			s.lex, s.isKey, s.tok = lexString, true, append(s.tok[:0], '"')
			return
		}
		s.beginMember(f)
		s.value(b)
	case wantColon:
		if b != ':' {
			s.fail(errNotJSON)
			return
		}
		s.out = append(s.out, ':')
		f.state = wantValue
	case wantValue:
		s.value(b)
	case wantCommaOrEnd:
		switch {
		case b == ',':
			f.state = wantMember
		case b == '}' && f.obj, b == ']' && !f.obj:
			s.pop()
		default:
			s.fail(errNotJSON)
		}
	}
}

func (s *scanner) beginMember(f *frame) {
	f.mark = len(s.out)
	if f.state == wantMember {
		s.out = append(s.out, ',')
	}
	f.state = wantValue
	if f.obj {
		f.state = wantColon
	}
}

// value starts a value with its first byte b.
func (s *scanner) value(b byte) {
	s.top().state = wantCommaOrEnd
	switch b {
	case '{', '[':
		s.push(b == '{')
	case '"':
		s.lex, s.isKey = lexString, false
		s.out = append(s.out, '"')
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 't', 'f', 'n':
		s.lex, s.tok = lexScalar, append(s.tok[:0], b)
	default:
		s.fail(errNotJSON)
	}
}

func (s *scanner) push(obj bool) {
	if len(s.stack) >= maxDepth {
		s.fail(errDepth)
		return
	}
	f := frame{obj: obj, mark: len(s.out), keysFrom: len(s.keyEnds), bufFrom: len(s.keyBuf)}
	if obj {
		s.out = append(s.out, '{')
	} else {
		s.out = append(s.out, '[')
	}
	s.stack = append(s.stack, f)
}

func (s *scanner) pop() {
	f := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	s.keyEnds, s.keyBuf = s.keyEnds[:f.keysFrom], s.keyBuf[:f.bufFrom]
	if f.obj {
		s.out = append(s.out, '}')
	} else {
		s.out = append(s.out, ']')
	}
	if len(s.stack) == 0 {
		s.done = true
	}
}

func (s *scanner) strBytes(p string) {
	if s.isKey {
		s.tok = append(s.tok, p...)
	} else {
		s.out = append(s.out, p...)
	}
}

func (s *scanner) strByte(b byte) {
	switch {
	case b == '\\':
		s.lex = lexEscape
		s.esc = append(s.esc[:0], '\\')
	case b == '"':
		s.flushSurrogate()
		s.lex = lexNone
		if s.isKey {
			s.endKey()
			return
		}
		s.out = append(s.out, '"')
	default: // a control character
		s.fail(errNotJSON)
	}
}

// escByte reads a byte of an escape. A whole \u high surrogate is held
// back until what follows it, as half a pair stands for no character yet.
func (s *scanner) escByte(b byte) {
	s.esc = append(s.esc, b)
	if len(s.esc) == 2 {
		switch b {
		case 'u':
			s.hexes = 4
			return
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.endEscape()
			return
		}
		s.fail(errNotJSON)
		return
	}
	if !isHex(b) {
		s.fail(errNotJSON)
		return
	}
	if s.hexes--; s.hexes > 0 {
		return
	}
	if highSurrogate(string(s.esc[2:])) {
		s.flushSurrogate()
		s.held = append(s.held, s.esc...)
		s.esc = s.esc[:0]
		s.lex = lexString
		return
	}
	s.endEscape()
}

func (s *scanner) endEscape() {
	s.lex = lexString
	s.flushSurrogate()
	s.strBytes(string(s.esc))
	s.esc = s.esc[:0]
}

// flushSurrogate writes a held high surrogate that no escape followed.
func (s *scanner) flushSurrogate() {
	if len(s.held) > 0 {
		h := s.held
		s.held = s.held[:0]
		s.strBytes(string(h))
	}
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

func highSurrogate(hex string) bool {
	return len(hex) == 4 && (hex[0] == 'd' || hex[0] == 'D') &&
		(hex[1] >= '8' && hex[1] <= '9' || hex[1] >= 'a' && hex[1] <= 'b' || hex[1] >= 'A' && hex[1] <= 'B')
}

// endKey takes a whole key: a key the object already has is refused, as the
// final decode refuses it, so a partial never shows a value the answer
// replaces.
func (s *scanner) endKey() {
	s.tok = append(s.tok, '"')
	k := s.tok[1 : len(s.tok)-1]
	if bytes.IndexByte(k, '\\') >= 0 {
		var dec string
		if err := json.Unmarshal(s.tok, &dec); err != nil {
			s.fail(errNotJSON)
			return
		}
		k = []byte(dec)
	}
	if s.hasKey(s.top(), k) {
		s.fail(fmt.Errorf("output: the answer has the key %q twice in one object", k))
		return
	}
	s.out = append(s.out, s.tok...)
}

// hasKey reports whether f already has the key k, and adds it if not.
func (s *scanner) hasKey(f *frame, k []byte) bool {
	if f.keys != nil {
		if _, dup := f.keys[string(k)]; dup {
			return true
		}
		f.keys[string(k)] = struct{}{}
		return false
	}
	start := f.bufFrom
	for _, end := range s.keyEnds[f.keysFrom:] {
		if bytes.Equal(s.keyBuf[start:end], k) {
			return true
		}
		start = end
	}
	if len(s.keyEnds)-f.keysFrom < manyKeys {
		s.keyBuf = append(s.keyBuf, k...)
		s.keyEnds = append(s.keyEnds, len(s.keyBuf))
		return false
	}
	f.keys = make(map[string]struct{}, 2*manyKeys)
	start = f.bufFrom
	for _, end := range s.keyEnds[f.keysFrom:] {
		f.keys[string(s.keyBuf[start:end])] = struct{}{}
		start = end
	}
	f.keys[string(k)] = struct{}{}
	s.keyEnds, s.keyBuf = s.keyEnds[:f.keysFrom], s.keyBuf[:f.bufFrom]
	return false
}

// scalarByte reads a byte of a number, true, false or null; a byte that
// cannot belong to one ends it, and is read again as structure.
func (s *scanner) scalarByte(b byte) {
	switch {
	case b >= '0' && b <= '9', b == '+', b == '-', b == '.', b == 'e', b == 'E',
		b >= 'a' && b <= 'z':
		s.tok = append(s.tok, b)
		if len(s.tok) > 1<<20 {
			s.fail(errNotJSON)
		}
		return
	}
	s.lex = lexNone
	if !json.Valid(s.tok) {
		s.fail(errNotJSON)
		return
	}
	s.out = append(s.out, s.tok...)
}

// usable is how much of out a document stands on: the length of out less
// a member still too short to show.
func (s *scanner) usable() int {
	if len(s.stack) == 0 {
		return len(s.out)
	}
	f := s.top()
	inStr := s.lex == lexString || s.lex == lexEscape
	switch {
	case inStr && !s.isKey:
		return len(s.out) - cutRune(s.out)
	case inStr, s.lex == lexScalar, f.state == wantColon, f.state == wantValue:
		return f.mark
	}
	return len(s.out)
}

// cutRune is how many bytes at the end of b are a UTF-8 sequence cut short.
func cutRune(b []byte) int {
	for k := len(b) - 1; k >= 0 && k >= len(b)-utf8.UTFMax; k-- {
		if utf8.RuneStart(b[k]) {
			if !utf8.FullRune(b[k:]) {
				return len(b) - k
			}
			return 0
		}
	}
	return 0
}

func (s *scanner) inValue() bool { return (s.lex == lexString || s.lex == lexEscape) && !s.isKey }

// docLen is len(s.doc(n)).
func (s *scanner) docLen(n int) int {
	if s.inValue() {
		n++
	}
	return n + len(s.stack)
}

// doc returns the answer so far, cut at n (from usable) and closed.
func (s *scanner) doc(n int) []byte {
	d := make([]byte, 0, n+len(s.stack)+1)
	d = append(d, s.out[:n]...)
	if s.inValue() {
		d = append(d, '"')
	}
	for i := len(s.stack) - 1; i >= 0; i-- {
		if s.stack[i].obj {
			d = append(d, '}')
		} else {
			d = append(d, ']')
		}
	}
	return d
}

// closeJSON returns the longest usable document in s, a prefix of a JSON
// object or array: what arrived, less an unfinished key, number or literal
// and a trailing comma, with every open string, array and object closed.
// It reports false when s does not start as an object or array, or is not
// JSON as far as it goes.
func closeJSON(str string) (string, bool) {
	var s scanner
	s.write(str)
	if s.err != nil || len(s.stack) == 0 && !s.done {
		return "", false
	}
	return string(s.doc(s.usable())), true
}
