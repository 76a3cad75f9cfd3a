package structjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type mixed struct {
	ID      int64   `json:"id"`
	Name    string  `json:"name"`
	Path    string  `json:"path"`
	Size    uint32  `json:"size"`
	Ratio   float64 `json:"ratio"`
	Weight  float32 `json:"weight"`
	OK      bool    `json:"ok"`
	Comment string  `json:"comment,omitempty"`
}

var mixedValue = mixed{
	ID: 1234567, Name: "report.txt", Path: `C:\data\"quoted"` + "\tdir/report.txt",
	Size: 48213, Ratio: 0.8125, Weight: 3.25, OK: true,
	Comment: "line one\nline two <with> tags & more",
}

// BenchmarkEncode compares Append with the pooled json.Encoder that render
// uses, on a two-field result and on an eight-field one with escapes.
func BenchmarkEncode(b *testing.B) {
	for _, c := range []struct {
		name string
		v    any
	}{
		{"small", small{42, "answer"}},
		{"mixed", mixedValue},
	} {
		b.Run(c.name+"/structjson", func(b *testing.B) {
			var encs Encoders
			buf := make([]byte, 0, 512)
			b.ReportAllocs()
			for b.Loop() {
				rv := reflect.ValueOf(c.v)
				var ok bool
				if buf, ok = encs.For(rv.Type()).Append(buf[:0], rv); !ok {
					b.Fatal("Append declined")
				}
			}
		})
		b.Run(c.name+"/json.Encoder", func(b *testing.B) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := enc.Encode(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendString measures the string scan on text a tool returns:
// plain prose, source code with quotes and tabs, and text beyond ASCII.
func BenchmarkAppendString(b *testing.B) {
	for _, c := range []struct{ name, s string }{
		{"short", "answer"},
		{"prose", strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)},
		{"code", strings.Repeat("\tif x := m[\"key\"]; x != nil {\n\t\treturn `a\\b`\n\t}\n", 20)},
		{"accents", strings.Repeat("Größe über naïve façade, déjà vu. ", 20)},
	} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 4*len(c.s))
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				buf = appendString(buf[:0], c.s)
			}
		})
	}
}
