package tool

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	toolpkg "github.com/lodeworks/lode/tool"
)

// ptrMarshal encodes itself only through its pointer, which encoding/json
// uses for slice elements (addressable) and not for map values.
type ptrMarshal struct{ N int }

func (p *ptrMarshal) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf(`"ptr %d"`, p.N)), nil }

// badUTF8 marshals to a JSON string holding invalid UTF-8.
type badUTF8 struct{}

func (badUTF8) MarshalJSON() ([]byte, error) { return []byte("\"a\xff\xfeb\""), nil }

type row struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// streamValues are the shapes renderTo streams, and a few it must leave to
// render.
func streamValues() map[string]any {
	rows := make([]any, 0, 300)
	for i := range 300 {
		rows = append(rows, map[string]any{"id": i, "name": strings.Repeat("é日", i%7), "tag": "<b>&", "nl": "a\nb", "ok": i%2 == 0, "none": nil})
	}
	cyclic := []any{nil}
	cyclic[0] = cyclic
	return map[string]any{
		"rows":             rows,
		"map of rows":      map[string]any{"z": rows[:50], "a": rows[50:120], "\"odd\" key\u2028<>": 1, "é": []any{}, "nilmap": map[string]any(nil), "nilslice": []any(nil)},
		"empty map":        map[string]any{},
		"nil slice":        []any(nil),
		"nil map":          map[string]any(nil),
		"ints":             []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		"structs":          []row{{1, "a"}, {2, "ö"}, {3, strings.Repeat("x", 40)}},
		"pointer methods":  []ptrMarshal{{1}, {2}},
		"map of ptr types": map[string]ptrMarshal{"b": {1}, "a": {2}},
		"nested ints":      map[string][]int{"b": {1, 2}, "a": nil},
		"bytes inside":     []any{[]byte("hello"), []byte{0xff, 0}},
		"byte slices":      [][]byte{[]byte("abc"), nil},
		"times":            []time.Time{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		"invalid utf8":     []any{badUTF8{}, "x", badUTF8{}},
		"deep":             deep(60),
		"array":            [3]string{"<", "é", ">"},
		"cycle":            cyclic,
		"NaN":              []any{1, math.NaN()},
		"numbers":          []any{0.0, math.Copysign(0, -1), 1.5, -2.25, 1e-6, 9.9e-7, 1e20, 1e21, 123456789.0, int64(-7), 1 << 62, float32(0.1), uint8(3)},
		"infinity":         map[string]any{"x": math.Inf(1)},
		"strings":          []any{"", "plain", `q"uote`, `back\slash`, "tab\t", "\u2028", "é", "<>&", "\x7f", "a\xffb"},
		"chan":             map[string]any{"c": make(chan int)},
	}
}

func deep(n int) any {
	var v any = "bottom é"
	for i := range n {
		if i%2 == 0 {
			v = []any{v, i}
		} else {
			v = map[string]any{"k": v}
		}
	}
	return v
}

// renderWhole is what Execute made of a value before streaming: the whole
// rendering, made valid UTF-8, bounded.
func renderWhole(v any, maxBytes, maxLines, fullLimit int) (artifact.ToolResult, error) {
	text, err := render(v, nil)
	if err != nil {
		return artifact.ToolResult{}, err
	}
	var r artifact.ToolResult
	r.Content, r.Truncated, r.Full = cutToBudget(strings.ToValidUTF8(text, "\uFFFD"), maxBytes, maxLines, fullLimit)
	return r, nil
}

// Streaming gives byte for byte what rendering whole and bounding gives,
// for every budget, cut or not, Full kept or not; errors too.
func TestRenderStreamsExactly(t *testing.T) {
	for name, v := range streamValues() {
		for _, maxBytes := range []int{-1, 1, 2, 3, 5, 8, 11, 17, 64, 101, 1000, 100000} {
			for _, maxLines := range []int{-1, 1, 2, 1000} {
				for _, fullLimit := range []int{-1, 1, 50, 5000} {
					h := &Handler{budget: toolpkg.Budget{Bytes: maxBytes, Lines: maxLines}, fullLimit: fullLimit}
					var got artifact.ToolResult
					gotErr := h.renderTo(&got, v, toolpkg.Budget{})
					if !got.Truncated {
						// as Execute does
						got.Content, got.Truncated, got.Full = cutToBudget(strings.ToValidUTF8(got.Content, "\uFFFD"), maxBytes, maxLines, fullLimit)
					}
					want, wantErr := renderWhole(v, maxBytes, maxLines, fullLimit)
					if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
						t.Fatalf("%s (bytes %d, lines %d, full %d): error %v, want %v", name, maxBytes, maxLines, fullLimit, gotErr, wantErr)
					}
					if got.Content != want.Content || got.Truncated != want.Truncated || got.Full != want.Full {
						t.Fatalf("%s (bytes %d, lines %d, full %d):\ngot  %q %v full %d bytes\nwant %q %v full %d bytes",
							name, maxBytes, maxLines, fullLimit, got.Content, got.Truncated, len(got.Full), want.Content, want.Truncated, len(want.Full))
					}
				}
			}
		}
	}
}

// Only maps and slices that render as JSON stream; strings, bytes, errors,
// Stringers and types with their own encoding render as before.
func TestStreams(t *testing.T) {
	cases := []struct {
		v    any
		want bool
	}{
		{nil, false},
		{"text", false},
		{[]byte("text"), false},
		{[]any{1}, true},
		{map[string]any{}, true},
		{[]row{}, true},
		{map[int]string{1: "a"}, false},
		{[2]int{}, false},
		{row{}, false},
		{[]ptrMarshal{}, true},
		{stringerSlice{}, false},
		{errorMap{}, false},
		{marshalerSlice{}, false},
	}
	for _, c := range cases {
		if got := streams(c.v); got != c.want {
			t.Errorf("streams(%T) = %v, want %v", c.v, got, c.want)
		}
	}
}

type stringerSlice []int

func (stringerSlice) String() string { return "s" }

type errorMap map[string]int

func (errorMap) Error() string { return "e" }

type marshalerSlice []int

func (marshalerSlice) MarshalJSON() ([]byte, error) { return []byte(`"m"`), nil }
