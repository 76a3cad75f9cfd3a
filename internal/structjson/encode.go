package structjson

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Encoder encodes the values of one struct type, or of a pointer to one.
// It holds no state beyond its compiled plan, so one Encoder serves any
// number of goroutines.
type Encoder struct {
	typ  reflect.Type
	plan plan
}

// kind says how a plan writes its value.
type kind uint8

const (
	kindBool kind = iota
	kindInt
	kindUint
	kindFloat32
	kindFloat64
	kindString
	kindStrings // a []string whose elements encode as plain strings
	kindPointer // a pointer to a value of plan elem; nil is null
	kindStruct  // an object of fields
)

// plan is what NewEncoder compiles for one type: its kind and, for a
// pointer or a struct, what lies beneath.
type plan struct {
	kind   kind
	elem   *plan
	fields []field
}

// field is one json-visible struct field, in declaration order.
type field struct {
	index     int
	key       string // `"name":`, written as is: a valid name needs no escape
	omitEmpty bool
	plan
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// NewEncoder compiles an encoder for t, a struct type or a pointer to one,
// or returns nil when t has a field the encoder does not handle. It handles
// fields of bool, integer, float and string kinds, []string, pointers to
// those, and nested structs of the same; tags with a name, "-" and
// omitempty. A bool or number type is accepted too, for a tool that
// returns a bare scalar.
func NewEncoder(t reflect.Type) *Encoder {
	if t == nil {
		return nil
	}
	var p *plan
	switch t.Kind() {
	case reflect.Struct:
		p = compile(t)
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct {
			p = compile(t)
		}
	case reflect.String, reflect.Slice:
		// Strings are rendered before an encoder is asked for; a bare
		// slice is left to encoding/json.
	default:
		p = compile(t)
	}
	if p == nil {
		return nil
	}
	return &Encoder{typ: t, plan: *p}
}

// compile returns the plan of t, or nil when t, or anything in it, is not
// plain: a type with its own marshalling, json.Number (a string kind that
// encodes as a number), an embedded field, a tag option this package does
// not implement, or two fields under one name.
func compile(t reflect.Type) *plan {
	if custom(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return &plan{kind: kindBool}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &plan{kind: kindInt}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return &plan{kind: kindUint}
	case reflect.Float32:
		return &plan{kind: kindFloat32}
	case reflect.Float64:
		return &plan{kind: kindFloat64}
	case reflect.String:
		if t == numberType {
			return nil
		}
		return &plan{kind: kindString}
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.String && e != numberType && !custom(e) {
			return &plan{kind: kindStrings}
		}
	case reflect.Pointer:
		// A named pointer type or a pointer to a pointer is rare enough to
		// leave to encoding/json; a pointer to a struct is accepted only at
		// the top, which keeps recursive types out of compile.
		if t.Name() != "" {
			return nil
		}
		e := t.Elem()
		if e.Kind() == reflect.Pointer {
			return nil
		}
		if elem := compile(e); elem != nil {
			return &plan{kind: kindPointer, elem: elem}
		}
	case reflect.Struct:
		return compileStruct(t)
	}
	return nil
}

// custom reports whether values of t, or addresses of them, carry their
// own JSON or text encoding.
func custom(t reflect.Type) bool {
	if t.Implements(marshalerType) || t.Implements(textMarshalerType) {
		return true
	}
	if t.Kind() != reflect.Pointer {
		pt := reflect.PointerTo(t)
		return pt.Implements(marshalerType) || pt.Implements(textMarshalerType)
	}
	return false
}

func compileStruct(t reflect.Type) *plan {
	visible, ok := jsonFields(t)
	if !ok {
		return nil
	}
	var fields []field
	for _, sf := range visible {
		if sf.omitZero {
			return nil
		}
		f := field{index: sf.Index[0], key: `"` + sf.name + `":`, omitEmpty: sf.omitEmpty}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
			return nil
		}
		p := compile(ft)
		if p == nil {
			return nil
		}
		f.plan = *p
		fields = append(fields, f)
	}
	return &plan{kind: kindStruct, fields: fields}
}

// Append appends to buf the JSON encoding of v, a value of the encoder's
// type, byte for byte as a json.Encoder with SetEscapeHTML(false) writes it
// (without its trailing newline), and reports true. It reports false for a
// value it leaves to encoding/json (a NaN, which encoding/json refuses);
// what it appended is then to be dropped.
func (e *Encoder) Append(buf []byte, v reflect.Value) ([]byte, bool) {
	if e == nil || !v.IsValid() || v.Type() != e.typ {
		return buf, false
	}
	return e.plan.append(buf, v)
}

func (p *plan) append(buf []byte, v reflect.Value) ([]byte, bool) {
	switch p.kind {
	case kindBool:
		return strconv.AppendBool(buf, v.Bool()), true
	case kindInt:
		return strconv.AppendInt(buf, v.Int(), 10), true
	case kindUint:
		return strconv.AppendUint(buf, v.Uint(), 10), true
	case kindFloat32:
		return appendFloat(buf, v.Float(), 32)
	case kindFloat64:
		return appendFloat(buf, v.Float(), 64)
	case kindString:
		return appendString(buf, v.String()), true
	case kindStrings:
		if v.IsNil() {
			return append(buf, "null"...), true
		}
		buf = append(buf, '[')
		for i := range v.Len() {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, v.Index(i).String())
		}
		return append(buf, ']'), true
	case kindPointer:
		if v.IsNil() {
			return append(buf, "null"...), true
		}
		return p.elem.append(buf, v.Elem())
	case kindStruct:
		return p.appendStruct(buf, v)
	}
	return buf, false
}

// appendStruct reads fields through reflect: unsafe offsets would need an
// addressable copy of v, and a pooled copy costs more than the reads save.
func (p *plan) appendStruct(buf []byte, v reflect.Value) ([]byte, bool) {
	next := byte('{')
	for i := range p.fields {
		f := &p.fields[i]
		fv := v.Field(f.index)
		if f.omitEmpty && empty(f.kind, fv) {
			continue
		}
		buf = append(buf, next)
		next = ','
		buf = append(buf, f.key...)
		var ok bool
		if buf, ok = f.plan.append(buf, fv); !ok {
			return buf, false
		}
	}
	if next == '{' {
		return append(buf, "{}"...), true
	}
	return append(buf, '}'), true
}

// empty is encoding/json's test for omitempty, for the kinds a plan has.
func empty(k kind, v reflect.Value) bool {
	switch k {
	case kindBool:
		return !v.Bool()
	case kindInt:
		return v.Int() == 0
	case kindUint:
		return v.Uint() == 0
	case kindFloat32, kindFloat64:
		return v.Float() == 0
	case kindString, kindStrings:
		return v.Len() == 0
	case kindPointer:
		return v.IsNil()
	}
	return false
}

// appendFloat writes f as encoding/json's float encoder does for the given
// bit size: ES6 number formatting, with the exponent's leading zero cut.
// It declines NaN and the infinities, which encoding/json refuses.
func appendFloat(buf []byte, f float64, bits int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return buf, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		// The cut-offs are compared at the value's own precision.
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	start := len(buf)
	buf = strconv.AppendFloat(buf, f, format, -1, bits)
	if format == 'e' {
		if n := len(buf); n-start >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
			buf[n-2] = buf[n-1]
			buf = buf[:n-1]
		}
	}
	return buf, true
}

const hex = "0123456789abcdef"

// safe marks the ASCII bytes that a JSON string holds as they are when
// HTML escaping is off; safeHTML, when it is on.
var safe, safeHTML = func() (s, h [utf8.RuneSelf]bool) {
	for b := range s {
		s[b] = b >= 0x20 && b != '"' && b != '\\'
		h[b] = s[b] && b != '<' && b != '>' && b != '&'
	}
	return s, h
}()

// AppendString appends s as a quoted JSON string, as encoding/json writes
// it (see appendString); with html, <, > and & are escaped as \u003c,
// \u003e and \u0026, as json.Marshal does by default.
func AppendString(buf []byte, s string, html bool) []byte {
	if html {
		return appendQuoted(buf, s, &safeHTML)
	}
	return appendQuoted(buf, s, &safe)
}

// StringLen is len(AppendString(nil, s, html)), counted without writing,
// for a caller that sizes its buffer once.
func StringLen(s string, html bool) int {
	tbl := &safe
	if html {
		tbl = &safeHTML
	}
	n := len(s) + 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case tbl[b]:
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n++
			default:
				n += 5
			}
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			n += 5
		case c == '\u2028' || c == '\u2029':
			n += 3
		}
		i += size
	}
	return n
}

// appendString quotes s as encoding/json does with HTML escaping off:
// short escapes where JSON has them, \u00XX for the other control bytes,
// \ufffd for each byte of invalid UTF-8, and U+2028 and U+2029 escaped
// for JavaScript's sake. Runs of bytes that need nothing are copied whole.
// The scan goes a byte at a time: a word-at-a-time scan is three times as
// fast on long plain prose but a quarter slower on short strings and on
// text dense with escapes or accents (BenchmarkAppendString).
func appendString(buf []byte, s string) []byte { return appendQuoted(buf, s, &safe) }

// appendQuoted is appendString with tbl marking the bytes kept as they are.
func appendQuoted(buf []byte, s string, tbl *[utf8.RuneSelf]bool) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if tbl[b] {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '"', '\\':
				buf = append(buf, '\\', b)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// Encoders memoises NewEncoder by type. The zero value is ready for use,
// and it is safe for concurrent use.
type Encoders struct {
	m sync.Map // reflect.Type → *encoderOf
	// last is the entry For returned last: a handler mostly renders one
	// type again and again, and comparing a pointer beats hashing it.
	last atomic.Pointer[encoderOf]
}

// encoderOf is an entry of Encoders: t's encoder, nil when t has none.
type encoderOf struct {
	t reflect.Type
	e *Encoder
}

// For returns the encoder of t, compiling it on first use; nil when t has
// none.
func (c *Encoders) For(t reflect.Type) *Encoder {
	if l := c.last.Load(); l != nil && l.t == t {
		return l.e
	}
	v, ok := c.m.Load(t)
	if !ok {
		v, _ = c.m.LoadOrStore(t, &encoderOf{t, NewEncoder(t)})
	}
	l := v.(*encoderOf)
	c.last.Store(l)
	return l.e
}
