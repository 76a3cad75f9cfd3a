//go:build !race

package structjson

import (
	"reflect"
	"testing"
)

// The race detector allocates on its own, so the count is checked only
// without it.
func TestAppendAllocs(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"small", small{42, "answer"}},
		{"pointer", &small{42, "answer"}},
		{"mixed", mixedValue},
		{"nested", nested{inner{1, "x"}, []string{"a", "b"}, ptr(2), ptr("s"), ptr(float32(1)), ptr(namedBool(true))}},
	}
	for _, tt := range tests {
		e := NewEncoder(reflect.TypeOf(tt.v))
		rv := reflect.ValueOf(tt.v)
		buf := make([]byte, 0, 1024)
		if _, ok := e.Append(buf, rv); !ok {
			t.Fatalf("%s: Append declined %#v", tt.name, tt.v)
		}
		allocs := testing.AllocsPerRun(100, func() {
			buf, _ = e.Append(buf[:0], rv)
		})
		if allocs != 0 {
			t.Errorf("%s: Append allocates %v times per run, want 0", tt.name, allocs)
		}
	}
}
