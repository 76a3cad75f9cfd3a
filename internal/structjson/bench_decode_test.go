package structjson_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lodeworks/lode/internal/structjson"
)

// BenchmarkDecode compares the fast path with json.Unmarshal on the same
// inputs: a small tool argument and a mixed one whose text has escapes.
func BenchmarkDecode(b *testing.B) {
	inputs := []struct {
		name string
		typ  reflect.Type
		raw  string
	}{
		{"small", reflect.TypeFor[decSmall](), `{"a":40,"b":2,"label":"answer"}`},
		{"mixed", reflect.TypeFor[decMixed](),
			`{"path":"/home/user/project/notes.txt","content":"First line\nSecond line\n\tindented \"quoted\" text\n",` +
				`"line":120,"limit":4000,"offset":-35,"ratio":0.75,"force":true,"mode":"append"}`},
	}
	for _, in := range inputs {
		b.Run(in.name+"/structjson", func(b *testing.B) {
			d := structjson.NewDecoder(in.typ)
			v := reflect.New(in.typ)
			p := v.UnsafePointer()
			b.ReportAllocs()
			for b.Loop() {
				v.Elem().SetZero()
				if !d.Decode(in.raw, p) {
					b.Fatal("declined")
				}
			}
		})
		b.Run(in.name+"/json", func(b *testing.B) {
			v := reflect.New(in.typ)
			ptr := v.Interface()
			raw := []byte(in.raw)
			b.ReportAllocs()
			for b.Loop() {
				v.Elem().SetZero()
				if err := json.Unmarshal(raw, ptr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
