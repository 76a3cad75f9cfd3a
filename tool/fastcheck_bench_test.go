package tool

import (
	"encoding/json"
	"testing"
)

// BenchmarkValidateArguments compares the two stages on arguments the
// quick check proves: the quick check alone, and the full path it saves
// (decoding into any, then jsonschema-go).
func BenchmarkValidateArguments(b *testing.B) {
	cs, err := compileSchema(json.RawMessage(quickSchemas[0]))
	if err != nil {
		b.Fatal(err)
	}
	const args = `{"a":40,"b":2,"label":"answer"}`
	b.Run("quick", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !cs.quick.proves(args) {
				b.Fatal("not proved")
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := parseArgs(args)
			if err != nil {
				b.Fatal(err)
			}
			if err := cs.validate(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
