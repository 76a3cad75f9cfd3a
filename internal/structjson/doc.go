// Package structjson decodes and encodes the plain struct types that most
// typed tools take and return — structs of booleans, numbers and strings,
// pointers to them and slices of them — exactly as encoding/json does, in
// a fraction of its time.
//
// A codec is compiled once per type. It never guesses: a type with a field
// it does not handle has no codec (NewDecoder and NewEncoder return nil),
// and an input or value it does not handle is declined (Decode and Append
// report false), so that the caller hands it to encoding/json, whose
// result and error messages stay the only ones. The fuzz tests hold each
// codec side by side with encoding/json.
//
// The decoder reads an escape-free string as a substring of its input, so
// an object of scalars decodes without allocating; the encoder reads
// fields through reflect and appends to the caller's buffer.
package structjson
