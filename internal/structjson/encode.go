package structjson

import (
	"reflect"
	"sync"
)

// Encoder encodes the values of one struct type, or of a pointer to one.
type Encoder struct {
	typ reflect.Type
}

// NewEncoder compiles an encoder for t, a struct type or a pointer to one,
// or returns nil when t has a field the encoder does not handle.
func NewEncoder(t reflect.Type) *Encoder {
	return nil
}

// Append appends to buf the JSON encoding of v, a value of the encoder's
// type, byte for byte as a json.Encoder with SetEscapeHTML(false) writes it
// (without its trailing newline), and reports true. It reports false for a
// value it leaves to encoding/json (a NaN, which encoding/json refuses);
// what it appended is then to be dropped.
func (e *Encoder) Append(buf []byte, v reflect.Value) ([]byte, bool) {
	return buf, false
}

// Encoders memoises NewEncoder by type. The zero value is ready for use,
// and it is safe for concurrent use.
type Encoders struct {
	m sync.Map // reflect.Type → *Encoder, nil for a type without one
}

// For returns the encoder of t, compiling it on first use; nil when t has
// none.
func (c *Encoders) For(t reflect.Type) *Encoder {
	if e, ok := c.m.Load(t); ok {
		return e.(*Encoder)
	}
	e, _ := c.m.LoadOrStore(t, NewEncoder(t))
	return e.(*Encoder)
}
