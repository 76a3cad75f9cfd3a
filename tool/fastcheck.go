package tool

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/lodeworks/lode/internal/structjson"
)

// A quick check proves, from the raw bytes of the arguments and without
// decoding them, that they are an object the full validator would accept.
// It understands a common subset of JSON Schema — type, properties,
// required, additionalProperties, items, enum of strings, the numeric
// bounds, minLength/maxLength, minItems/maxItems and annotations — and
// answers only "proved" or "not proved". Anything it does not understand,
// and any input it finds wrong, is not proved, and the call goes through
// the full validator, so the accepted set and the error messages are the
// full validator's alone. FuzzValidateQuick holds the two side by side.

// JSON types as bits of quickNode.types.
const (
	tNull = 1 << iota
	tBoolean
	tObject
	tArray
	tString
	tNumber
	tInteger
)

var typeBits = map[string]uint8{
	"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray,
	"string": tString, "number": tNumber | tInteger, "integer": tInteger,
}

// quickNode is one schema compiled for the quick check. The zero value
// accepts any JSON value.
type quickNode struct {
	// opaque marks a schema the check does not understand: no value is
	// proved against it.
	opaque bool
	types  uint8 // allowed types; 0 means any

	props    map[string]*quickNode
	required []string
	// keys joins props and required for the scan: one lookup per key,
	// in a short list or, past maxKeyList names, a map.
	keyList []quickKey
	keys    map[string]quickKey
	// extra is the schema of properties not in props; nil allows any.
	extra *quickNode

	items              *quickNode // nil allows any item
	minItems, maxItems int        // -1 when absent

	minLen, maxLen int // -1 when absent
	enum           []string
	hasEnum        bool

	min, max, xmin, xmax float64
	bounds               uint8 // which of min, max, xmin, xmax apply
}

const (
	bMin = 1 << iota
	bMax
	bXMin
	bXMax
)

// maxKeyList is how many names an object's schema may have for the scan
// to look them up in a list rather than a map.
const maxKeyList = 16

// lookup returns what n says of the property key; the zero quickKey for a
// name n does not mention.
func (n *quickNode) lookup(key string) quickKey {
	if n.keys != nil {
		return n.keys[key]
	}
	for _, k := range n.keyList {
		if k.name == key {
			return k
		}
	}
	return quickKey{}
}

// quickKey is what an object's schema says of one property name.
type quickKey struct {
	name     string
	node     *quickNode
	named    bool   // in properties: node applies, not extra
	required uint64 // the bits of required this name meets
}

// maxQuickDepth bounds how deep the check follows nested values; deeper
// arguments go to the full validator.
const maxQuickDepth = 64

// compileQuick compiles the schema document raw. It never fails: what it
// cannot use becomes opaque.
func compileQuick(raw json.RawMessage) *quickNode {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return &quickNode{opaque: true}
	}
	return quickFrom(doc, true)
}

// annotations are keywords that do not affect validation. "format" is an
// annotation for the full validator too: it asserts no formats.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"format": true, "$defs": true, "definitions": true,
}

var knownDrafts = map[string]bool{
	"http://json-schema.org/draft-07/schema#":      true,
	"https://json-schema.org/draft-07/schema#":     true,
	"https://json-schema.org/draft/2020-12/schema": true,
}

func quickFrom(doc any, root bool) *quickNode {
	opaque := &quickNode{opaque: true}
	switch d := doc.(type) {
	case bool:
		if d {
			return &quickNode{minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
		}
		return opaque
	case map[string]any:
		n := &quickNode{minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
		for k, v := range d {
			if !n.keyword(k, v, root) {
				return opaque
			}
		}
		if len(n.required) > 64 {
			return opaque
		}
		keys := make(map[string]quickKey, len(n.props)+len(n.required))
		for name, sub := range n.props {
			keys[name] = quickKey{name: name, node: sub, named: true}
		}
		for i, name := range n.required {
			k := keys[name]
			k.name = name
			k.required |= 1 << i
			keys[name] = k
		}
		if len(keys) > maxKeyList {
			n.keys = keys
			return n
		}
		for _, k := range keys {
			n.keyList = append(n.keyList, k)
		}
		return n
	}
	return opaque
}

// keyword compiles one keyword into n and reports whether it understood it.
func (n *quickNode) keyword(k string, v any, root bool) bool {
	switch k {
	case "type":
		switch t := v.(type) {
		case string:
			n.types = typeBits[t]
			return n.types != 0
		case []any:
			for _, e := range t {
				s, _ := e.(string)
				if typeBits[s] == 0 {
					return false
				}
				n.types |= typeBits[s]
			}
			return n.types != 0
		}
		return false
	case "properties":
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		n.props = make(map[string]*quickNode, len(m))
		for name, sub := range m {
			n.props[name] = quickFrom(sub, false)
		}
		return true
	case "required":
		list, ok := v.([]any)
		if !ok {
			return false
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return false
			}
			n.required = append(n.required, s)
		}
		return true
	case "additionalProperties":
		n.extra = quickFrom(v, false)
		return true
	case "items":
		if _, ok := v.([]any); ok {
			return false // draft-07 tuples
		}
		n.items = quickFrom(v, false)
		return true
	case "minItems", "maxItems", "minLength", "maxLength":
		f, ok := v.(float64)
		if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
			return false
		}
		i := int(f)
		switch k {
		case "minItems":
			n.minItems = i
		case "maxItems":
			n.maxItems = i
		case "minLength":
			n.minLen = i
		default:
			n.maxLen = i
		}
		return true
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		f, ok := v.(float64)
		if !ok {
			return false
		}
		switch k {
		case "minimum":
			n.min, n.bounds = f, n.bounds|bMin
		case "maximum":
			n.max, n.bounds = f, n.bounds|bMax
		case "exclusiveMinimum":
			n.xmin, n.bounds = f, n.bounds|bXMin
		default:
			n.xmax, n.bounds = f, n.bounds|bXMax
		}
		return true
	case "enum":
		list, ok := v.([]any)
		if !ok {
			return false
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return false
			}
			n.enum = append(n.enum, s)
		}
		n.hasEnum = true
		return true
	case "$schema":
		// The full validator refuses every call against a version it does
		// not know.
		s, _ := v.(string)
		return root && knownDrafts[s]
	}
	return annotations[k]
}

// proves reports whether raw, a whole arguments document, is an object
// that n accepts.
func (n *quickNode) proves(raw string) bool {
	s := quickScan{b: raw}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	if !s.value(n, 0) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

type quickScan struct {
	b string
	i int
}

func (s *quickScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value checks the value at s.i against n (nil: any value) and moves past it.
func (s *quickScan) value(n *quickNode, depth int) bool {
	if n != nil && n.opaque || depth > maxQuickDepth || s.i >= len(s.b) {
		return false
	}
	var typ uint8
	switch c := s.b[s.i]; {
	case c == '{':
		typ = tObject
	case c == '[':
		typ = tArray
	case c == '"':
		typ = tString
	case c == 't' || c == 'f':
		typ = tBoolean
	case c == 'n':
		typ = tNull
	case c == '-' || c >= '0' && c <= '9':
		typ = tNumber
	default:
		return false
	}
	if n != nil && n.hasEnum && typ != tString {
		return false
	}
	if n != nil && n.types != 0 && typ != tNumber && n.types&typ == 0 {
		return false
	}
	switch typ {
	case tObject:
		return s.object(n, depth)
	case tArray:
		return s.array(n, depth)
	case tString:
		return s.str(n)
	case tBoolean:
		if s.lit("true") || s.lit("false") {
			return true
		}
		return false
	case tNull:
		return s.lit("null")
	}
	return s.number(n)
}

func (s *quickScan) lit(word string) bool {
	if len(s.b)-s.i >= len(word) && s.b[s.i:s.i+len(word)] == word {
		s.i += len(word)
		return true
	}
	return false
}

func (s *quickScan) object(n *quickNode, depth int) bool {
	s.i++           // '{'
	var seen uint64 // bit i: required[i] was present
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return n == nil || len(n.required) == 0
	}
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		key, plain, ok := s.scanString()
		if !ok {
			return false
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		var sub *quickNode
		if n != nil {
			// A key with escapes or bytes that are not UTF-8 reads differently
			// once decoded; leave it to the full validator.
			if !plain {
				return false
			}
			k := n.lookup(key)
			sub = n.extra
			if k.named {
				sub = k.node
			}
			seen |= k.required
		}
		if !s.value(sub, depth+1) {
			return false
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return n == nil || seen == 1<<len(n.required)-1
		default:
			return false
		}
	}
}

func (s *quickScan) array(n *quickNode, depth int) bool {
	s.i++ // '['
	var items *quickNode
	if n != nil {
		items = n.items
	}
	count := 0
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
	} else {
		for {
			s.space()
			if !s.value(items, depth+1) {
				return false
			}
			count++
			s.space()
			if s.i >= len(s.b) {
				return false
			}
			if s.b[s.i] == ']' {
				s.i++
				break
			}
			if s.b[s.i] != ',' {
				return false
			}
			s.i++
		}
	}
	if n == nil {
		return true
	}
	return (n.minItems < 0 || count >= n.minItems) && (n.maxItems < 0 || count <= n.maxItems)
}

// str moves past the string at s.i and checks it against n.
func (s *quickScan) str(n *quickNode) bool {
	text, plain, ok := s.scanString()
	if !ok {
		return false
	}
	if n == nil || n.minLen < 0 && n.maxLen < 0 && !n.hasEnum {
		return true
	}
	if !plain {
		return false
	}
	if runes := utf8.RuneCountInString(text); n.minLen >= 0 && runes < n.minLen || n.maxLen >= 0 && runes > n.maxLen {
		return false
	}
	if !n.hasEnum {
		return true
	}
	for _, e := range n.enum {
		if e == text {
			return true
		}
	}
	return false
}

// scanString moves past the string at s.i and returns its raw text, and
// whether that text is exactly what it decodes to: no escapes, valid UTF-8.
func (s *quickScan) scanString() (text string, plain, ok bool) {
	s.i++ // '"'
	start := s.i
	escaped, high := false, false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			text = s.b[start:s.i]
			s.i++
			return text, !escaped && (!high || utf8.ValidString(text)), true
		case c < 0x20:
			return "", false, false
		case c >= utf8.RuneSelf:
			high = true
			s.i++
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return "", false, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.b)-s.i < 5 {
					return "", false, false
				}
				for _, h := range []byte(s.b[s.i+1 : s.i+5]) {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return "", false, false
					}
				}
				s.i += 5
			default:
				return "", false, false
			}
		default:
			s.i++
		}
	}
	return "", false, false
}

// number moves past the number at s.i and checks it against n: the full
// validator sees it as the float64 encoding/json makes of it.
func (s *quickScan) number(n *quickNode) bool {
	start := s.i
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b):
		return false
	case s.b[s.i] == '0':
		s.i++
	case s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	f, ok := parseNumber(s.b[start:s.i])
	if !ok || n == nil {
		return ok
	}
	if n.types != 0 {
		typ := uint8(tNumber)
		if _, frac := math.Modf(f); frac == 0 {
			typ = tInteger
		}
		if n.types&typ == 0 {
			return false
		}
	}
	b := n.bounds
	return (b&bMin == 0 || f >= n.min) && (b&bMax == 0 || f <= n.max) &&
		(b&bXMin == 0 || f > n.xmin) && (b&bXMax == 0 || f < n.xmax)
}

// parseNumber is the float64 encoding/json makes of a JSON number, and
// false when it refuses the number as out of range. A short integer, the
// common case, is exact in a float64 and needs no parsing.
func parseNumber(text string) (float64, bool) {
	if len(text) <= 15 {
		neg := text[0] == '-'
		digits := text
		if neg {
			digits = text[1:]
		}
		var v int64
		whole := true
		for i := 0; i < len(digits); i++ {
			c := digits[i]
			if c < '0' || c > '9' {
				whole = false
				break
			}
			v = v*10 + int64(c-'0')
		}
		if whole {
			if neg {
				return -float64(v), true
			}
			return float64(v), true
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	return f, err == nil
}

func (s *quickScan) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// impliedBy reports whether n, the schema of a typed tool's arguments,
// accepts every object that the tool's compiled decoder accepts (see
// structjson) once the fields n requires are present, and returns those
// fields as a mask over fields. The decoder takes only keys that are
// exactly the names of fields, and for each only values of the field's
// own JSON type, and declines everything else; so it is enough that the
// schema each name falls under takes every value of that type.
func (n *quickNode) impliedBy(fields []structjson.Field) (required uint64, ok bool) {
	if n == nil || n.opaque || n.hasEnum || n.types != 0 && n.types&tObject == 0 || len(fields) > 64 {
		return 0, false
	}
	for _, f := range fields {
		sub := n.extra
		if k := n.lookup(f.Name); k.named {
			sub = k.node
		}
		if !takesEvery(sub, f) {
			return 0, false
		}
	}
	for _, name := range n.required {
		k := -1
		for i := range fields {
			if fields[i].Name == name {
				k = i
				break
			}
		}
		if k < 0 {
			return 0, false // a required name no field has: never met
		}
		required |= 1 << k
	}
	return required, true
}

// takesEvery reports whether n (nil: any value) accepts every value the
// decoder stores into f. Pointers and slices, which also take null and
// arrays, are left to the quick check.
func takesEvery(n *quickNode, f structjson.Field) bool {
	if n == nil {
		return true
	}
	if n.opaque || n.hasEnum || n.bounds != 0 || n.minLen >= 0 || n.maxLen >= 0 || f.Pointer || f.Slice {
		return false
	}
	var need uint8
	switch f.Kind {
	case reflect.Bool:
		need = tBoolean
	case reflect.String:
		need = tString
	case reflect.Float32, reflect.Float64:
		need = tNumber // any number; "integer" alone would refuse 1.5
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		need = tInteger // the decoder takes integer literals only
	default:
		return false
	}
	return n.types == 0 || n.types&need != 0
}
