package structjson

import (
	"reflect"
	"unsafe"
)

// Decoder decodes JSON objects into one struct type.
type Decoder struct {
	typ reflect.Type
}

// NewDecoder compiles a decoder for the struct type t, or returns nil when
// t is not a struct or has a field the decoder does not handle.
func NewDecoder(t reflect.Type) *Decoder {
	return nil
}

// Decode decodes the JSON document raw into the struct p points to, which
// must be a zero value of the decoder's type, and reports true when it did
// so exactly as json.Unmarshal would have. It reports false for any input
// it leaves to encoding/json; *p may then hold part of raw, so the caller
// zeroes it before calling json.Unmarshal.
func (d *Decoder) Decode(raw string, p unsafe.Pointer) bool {
	return false
}
