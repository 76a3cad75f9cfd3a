// Package optparse reads the options of lode's built-in packs — the value
// of a pack's key in a tools: map, as YAML or JSON decoding gives it — so
// that every pack refuses a bad option with the same words.
//
// A Set names the pack and the keys it takes. Each walks the options in key
// order, so the first problem reported does not depend on map order, and
// refuses a key the pack does not take; the readers (String, Path, Bool,
// PositiveInt, InRange) check one value each. Every error reads
// "<pack>: option <key> …".
package optparse
