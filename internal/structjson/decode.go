package structjson

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Decoder decodes JSON objects into one struct type.
type Decoder struct {
	typ    reflect.Type
	fields []decField
}

// decField is one JSON-visible field of the plan: its exact JSON name,
// where it lives in the struct, and how to store into it.
type decField struct {
	name   string
	off    uintptr
	shape  shape
	scalar // of the field, its pointee or its elements
	slice  func(sc scalar, raw string, i int, fp unsafe.Pointer) (int, bool)
}

// shape is how a field holds its scalar.
type shape uint8

const (
	inPlace   shape = iota // T
	byPointer              // *T: null is nil
	inSlice                // []T: null is nil, [] is empty
)

// scalar is a bool, integer, float or string kind and its width.
type scalar struct {
	kind reflect.Kind
	bits int // of an integer or float kind
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// NewDecoder compiles a decoder for the struct type t, or returns nil when
// t is not a struct or has a field the decoder does not handle.
//
// Fields are handled when encoding/json would see them as plain values: a
// bool, integer, float or string kind (named types included) without its
// own UnmarshalJSON or UnmarshalText, other than json.Number, or an unnamed
// pointer to one, or a slice of one ([]byte excepted); not embedded,
// without the ",string" option, and under a JSON name no other field
// shares.
func NewDecoder(t reflect.Type) *Decoder {
	if t == nil || t.Kind() != reflect.Struct || customUnmarshal(t) {
		return nil
	}
	fields, ok := jsonFields(t)
	if !ok {
		return nil
	}
	d := &Decoder{typ: t}
	for _, sf := range fields {
		f := decField{name: sf.name, off: sf.Offset}
		ft := sf.Type
		switch {
		case ft.Kind() == reflect.Pointer && ft.Name() == "":
			f.shape, ft = byPointer, ft.Elem()
		case ft.Kind() == reflect.Slice && !customUnmarshal(ft):
			f.shape, ft = inSlice, ft.Elem()
		}
		if f.scalar, ok = scalarOf(ft); !ok {
			return nil
		}
		if f.shape == inSlice {
			if f.slice = sliceDecoder(f.kind); f.slice == nil {
				return nil
			}
		}
		d.fields = append(d.fields, f)
	}
	return d
}

// scalarOf returns the scalar of t, or false when encoding/json would not
// decode a value of t by its kind alone: t has an UnmarshalJSON or
// UnmarshalText method, or is json.Number, which takes a number literal
// and checks its strings.
func scalarOf(t reflect.Type) (scalar, bool) {
	sc := scalar{kind: t.Kind()}
	switch sc.kind {
	case reflect.Bool, reflect.String:
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		sc.bits = t.Bits()
	default:
		return scalar{}, false
	}
	if customUnmarshal(t) || t == numberType {
		return scalar{}, false
	}
	return sc, true
}

// customUnmarshal reports whether encoding/json would hand a value of t to
// a method of its own rather than decode it by kind.
func customUnmarshal(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshalerType) || t.Implements(textUnmarshalerType) ||
		pt.Implements(jsonUnmarshalerType) || pt.Implements(textUnmarshalerType)
}

// Decode decodes the JSON document raw into the struct p points to, which
// must be a zero value of the decoder's type, and reports true when it did
// so exactly as json.Unmarshal would have. It reports false for any input
// it leaves to encoding/json; *p may then hold part of raw, so the caller
// zeroes it before calling json.Unmarshal.
//
// An escape-free string field gets a substring of raw, so nothing is
// allocated for an object of scalars and such strings.
func (d *Decoder) Decode(raw string, p unsafe.Pointer) bool {
	_, ok := d.DecodeSeen(raw, p)
	return ok
}

// Field is a field a Decoder fills, as Fields lists it.
type Field struct {
	Name string       // its JSON name
	Kind reflect.Kind // of its value, or of what it points to or holds
	// Pointer marks an unnamed pointer, which null sets to nil; Slice a
	// slice, which null sets to nil and an array fills.
	Pointer, Slice bool
}

// Fields lists the fields d fills, in the order of DecodeSeen's bits.
func (d *Decoder) Fields() []Field {
	if d == nil {
		return nil
	}
	out := make([]Field, len(d.fields))
	for k, f := range d.fields {
		out[k] = Field{Name: f.name, Kind: f.kind, Pointer: f.shape == byPointer, Slice: f.shape == inSlice}
	}
	return out
}

// DecodeSeen is Decode, also reporting which fields raw set: bit k stands
// for Fields()[k], for the first 64 fields. It is what lets a caller check
// required fields without reading raw again.
func (d *Decoder) DecodeSeen(raw string, p unsafe.Pointer) (seen uint64, ok bool) {
	if d == nil || p == nil {
		return 0, false
	}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return 0, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return 0, skipSpace(raw, i+1) == len(raw)
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return 0, false
		}
		// A field name holds no quote, backslash or control byte, so the
		// first quote ends any key that can match one exactly.
		n := strings.IndexByte(raw[i+1:], '"')
		if n < 0 {
			return 0, false
		}
		k := d.field(raw[i+1 : i+1+n])
		if k < 0 {
			// Unknown keys and case-insensitive matches are encoding/json's.
			return 0, false
		}
		f := &d.fields[k]
		seen |= 1 << k // zero past 64: a shift by 64 or more gives 0
		i = skipSpace(raw, i+n+2)
		if i >= len(raw) || raw[i] != ':' {
			return 0, false
		}
		i = skipSpace(raw, i+1)
		if i, ok = f.decode(raw, i, unsafe.Add(p, f.off)); !ok {
			return 0, false
		}
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return 0, false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return seen, skipSpace(raw, i+1) == len(raw)
		default:
			return 0, false
		}
	}
}

// field returns the index of the field whose JSON name is exactly key, or
// -1.
func (d *Decoder) field(key string) int {
	for k := range d.fields {
		if d.fields[k].name == key {
			return k
		}
	}
	return -1
}

// decode reads the value at raw[i:] into the field at fp and returns the
// index after it.
func (f *decField) decode(raw string, i int, fp unsafe.Pointer) (int, bool) {
	switch f.shape {
	case byPointer:
		if strings.HasPrefix(raw[i:], "null") {
			*(*unsafe.Pointer)(fp) = nil
			return i + 4, true
		}
		q := newScalar(f.kind)
		end, ok := f.scalar.decode(raw, i, q)
		if ok {
			*(*unsafe.Pointer)(fp) = q
		}
		return end, ok
	case inSlice:
		return f.slice(f.scalar, raw, i, fp)
	}
	return f.scalar.decode(raw, i, fp)
}

// newScalar allocates a zero value of a scalar kind.
func newScalar(k reflect.Kind) unsafe.Pointer {
	switch k {
	case reflect.Bool:
		return unsafe.Pointer(new(bool))
	case reflect.String:
		return unsafe.Pointer(new(string))
	case reflect.Int8, reflect.Uint8:
		return unsafe.Pointer(new(uint8))
	case reflect.Int16, reflect.Uint16:
		return unsafe.Pointer(new(uint16))
	case reflect.Int32, reflect.Uint32, reflect.Float32:
		return unsafe.Pointer(new(uint32))
	case reflect.Int, reflect.Uint:
		return unsafe.Pointer(new(uint))
	case reflect.Uintptr:
		return unsafe.Pointer(new(uintptr))
	default:
		return unsafe.Pointer(new(uint64))
	}
}

// sliceDecoder returns the decoder of a slice of k, or nil for []byte,
// whose strings encoding/json reads as base64.
func sliceDecoder(k reflect.Kind) func(scalar, string, int, unsafe.Pointer) (int, bool) {
	switch k {
	case reflect.Bool:
		return decodeSlice[bool]
	case reflect.String:
		return decodeSlice[string]
	case reflect.Int:
		return decodeSlice[int]
	case reflect.Int8:
		return decodeSlice[int8]
	case reflect.Int16:
		return decodeSlice[int16]
	case reflect.Int32:
		return decodeSlice[int32]
	case reflect.Int64:
		return decodeSlice[int64]
	case reflect.Uint:
		return decodeSlice[uint]
	case reflect.Uint16:
		return decodeSlice[uint16]
	case reflect.Uint32:
		return decodeSlice[uint32]
	case reflect.Uint64:
		return decodeSlice[uint64]
	case reflect.Uintptr:
		return decodeSlice[uintptr]
	case reflect.Float32:
		return decodeSlice[float32]
	case reflect.Float64:
		return decodeSlice[float64]
	}
	return nil
}

// decodeSlice reads a JSON array or null at raw[i:] into the []T at fp,
// where T has the layout of sc's kind (a named element type shares it).
// A null element is declined: encoding/json would leave the element as it
// was, which a repeated key makes visible.
func decodeSlice[T any](sc scalar, raw string, i int, fp unsafe.Pointer) (int, bool) {
	if strings.HasPrefix(raw[i:], "null") {
		*(*[]T)(fp) = nil
		return i + 4, true
	}
	if i >= len(raw) || raw[i] != '[' {
		return i, false
	}
	s := make([]T, 0) // encoding/json makes [] an empty slice, not nil
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		*(*[]T)(fp) = s
		return i + 1, true
	}
	for {
		var zero T
		s = append(s, zero)
		end, ok := sc.decode(raw, i, unsafe.Pointer(&s[len(s)-1]))
		if !ok {
			return i, false
		}
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return i, false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case ']':
			*(*[]T)(fp) = s
			return i + 1, true
		default:
			return i, false
		}
	}
}

// decode reads the value at raw[i:] into the scalar at fp and returns the
// index after it; it declines a value of another JSON type than the kind
// takes, null included.
func (f scalar) decode(raw string, i int, fp unsafe.Pointer) (int, bool) {
	switch f.kind {
	case reflect.Bool:
		switch {
		case strings.HasPrefix(raw[i:], "true"):
			*(*bool)(fp) = true
			return i + 4, true
		case strings.HasPrefix(raw[i:], "false"):
			*(*bool)(fp) = false
			return i + 5, true
		}
		return i, false
	case reflect.String:
		s, end, ok := readString(raw, i)
		if ok {
			*(*string)(fp) = s
		}
		return end, ok
	case reflect.Float32, reflect.Float64:
		end := scanNumber(raw, i)
		if end == i {
			return i, false
		}
		v, err := strconv.ParseFloat(raw[i:end], f.bits)
		if err != nil {
			return i, false
		}
		if f.kind == reflect.Float32 {
			*(*float32)(fp) = float32(v)
		} else {
			*(*float64)(fp) = v
		}
		return end, true
	}
	neg, mag, end, ok := readInteger(raw, i)
	if !ok {
		return i, false
	}
	switch f.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		limit := uint64(1)<<(f.bits-1) - 1
		if neg {
			limit++ // one more negative value than positive ones
		}
		if mag > limit {
			return i, false
		}
		v := int64(mag)
		if neg {
			v = -v
		}
		switch f.kind {
		case reflect.Int:
			*(*int)(fp) = int(v)
		case reflect.Int8:
			*(*int8)(fp) = int8(v)
		case reflect.Int16:
			*(*int16)(fp) = int16(v)
		case reflect.Int32:
			*(*int32)(fp) = int32(v)
		default:
			*(*int64)(fp) = v
		}
	default:
		// encoding/json's ParseUint refuses any sign, "-0" too.
		if neg || (f.bits < 64 && mag >= uint64(1)<<f.bits) {
			return i, false
		}
		switch f.kind {
		case reflect.Uint:
			*(*uint)(fp) = uint(mag)
		case reflect.Uint8:
			*(*uint8)(fp) = uint8(mag)
		case reflect.Uint16:
			*(*uint16)(fp) = uint16(mag)
		case reflect.Uint32:
			*(*uint32)(fp) = uint32(mag)
		case reflect.Uintptr:
			*(*uintptr)(fp) = uintptr(mag)
		default:
			*(*uint64)(fp) = mag
		}
	}
	return end, true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(raw string, i int) int {
	for i < len(raw) {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// readInteger reads a JSON integer -?(0|[1-9][0-9]*) at raw[i:] and returns
// its sign, its magnitude and the index after it. It declines a fraction or
// an exponent, which encoding/json refuses for integer kinds, and a
// magnitude beyond uint64.
func readInteger(raw string, i int) (neg bool, mag uint64, end int, ok bool) {
	j := i
	if j < len(raw) && raw[j] == '-' {
		neg = true
		j++
	}
	switch {
	case j >= len(raw) || raw[j] < '0' || raw[j] > '9':
		return false, 0, i, false
	case raw[j] == '0':
		j++
	default:
		for ; j < len(raw) && raw[j] >= '0' && raw[j] <= '9'; j++ {
			d := uint64(raw[j] - '0')
			if mag > (math.MaxUint64-d)/10 {
				return false, 0, i, false
			}
			mag = mag*10 + d
		}
	}
	if j < len(raw) && (raw[j] == '.' || raw[j] == 'e' || raw[j] == 'E') {
		return false, 0, i, false
	}
	return neg, mag, j, true
}

// scanNumber returns the index after the JSON number at raw[i:], or i when
// there is none. strconv.ParseFloat accepts more ("inf", "0x1p3", "+1"),
// so the grammar is checked here.
func scanNumber(raw string, i int) int {
	j := i
	if j < len(raw) && raw[j] == '-' {
		j++
	}
	switch {
	case j >= len(raw) || raw[j] < '0' || raw[j] > '9':
		return i
	case raw[j] == '0':
		j++
	default:
		j = skipDigits(raw, j)
	}
	if j < len(raw) && raw[j] == '.' {
		k := skipDigits(raw, j+1)
		if k == j+1 {
			return i
		}
		j = k
	}
	if j < len(raw) && (raw[j] == 'e' || raw[j] == 'E') {
		j++
		if j < len(raw) && (raw[j] == '+' || raw[j] == '-') {
			j++
		}
		k := skipDigits(raw, j)
		if k == j {
			return i
		}
		j = k
	}
	return j
}

func skipDigits(raw string, i int) int {
	for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
		i++
	}
	return i
}

// readString reads the JSON string whose opening quote is at raw[i] and
// returns its value and the index after the closing quote. Without escapes
// the value is a substring of raw. It declines invalid UTF-8, which
// encoding/json would replace, and what is not JSON.
func readString(raw string, i int) (string, int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return "", i, false
	}
	start := i + 1
	for j := start; j < len(raw); {
		c := raw[j]
		switch {
		case c == '"':
			return raw[start:j], j + 1, true
		case c == '\\':
			return unescape(raw, start, j)
		case c < ' ':
			return "", i, false
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRuneInString(raw[j:])
			if r == utf8.RuneError && size == 1 {
				return "", i, false
			}
			j += size
		}
	}
	return "", i, false
}

// unescape finishes a string that starts at raw[start] and has its first
// backslash at raw[j], building the value in new memory. A lone or
// mismatched UTF-16 surrogate becomes U+FFFD, as encoding/json has it.
func unescape(raw string, start, j int) (string, int, bool) {
	// Escapes only shrink, so the raw string bounds the value: size the
	// buffer by it, not by the rest of the input, which the value would pin.
	end := j
	for end < len(raw) && raw[end] != '"' {
		if raw[end] == '\\' {
			end++
		}
		end++
	}
	b := make([]byte, 0, min(end, len(raw))-start)
	b = append(b, raw[start:j]...)
	for j < len(raw) {
		c := raw[j]
		switch {
		case c == '"':
			return unsafe.String(unsafe.SliceData(b), len(b)), j + 1, true
		case c == '\\':
			if j+1 >= len(raw) {
				return "", start, false
			}
			var out byte
			switch raw[j+1] {
			case '"', '\\', '/':
				out = raw[j+1]
			case 'b':
				out = '\b'
			case 'f':
				out = '\f'
			case 'n':
				out = '\n'
			case 'r':
				out = '\r'
			case 't':
				out = '\t'
			case 'u':
				r := hex4(raw, j)
				if r < 0 {
					return "", start, false
				}
				j += 6
				if utf16.IsSurrogate(r) {
					if pair := utf16.DecodeRune(r, hex4(raw, j)); pair != utf8.RuneError {
						r = pair
						j += 6
					} else {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
				continue
			default:
				return "", start, false
			}
			b = append(b, out)
			j += 2
		case c < ' ':
			return "", start, false
		default:
			// Copy the run of plain text up to the next quote, backslash
			// or control byte at once.
			k := j
			for k < len(raw) && raw[k] != '"' && raw[k] != '\\' && raw[k] >= ' ' {
				if raw[k] < utf8.RuneSelf {
					k++
					continue
				}
				r, size := utf8.DecodeRuneInString(raw[k:])
				if r == utf8.RuneError && size == 1 {
					return "", start, false
				}
				k += size
			}
			b = append(b, raw[j:k]...)
			j = k
		}
	}
	return "", start, false
}

// hex4 returns the code unit of the escape \uXXXX at raw[j:], or -1 when
// there is none.
func hex4(raw string, j int) rune {
	if j+6 > len(raw) || raw[j] != '\\' || raw[j+1] != 'u' {
		return -1
	}
	var r rune
	for k := j + 2; k < j+6; k++ {
		c := raw[k]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
