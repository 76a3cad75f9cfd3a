package tool

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	toolpkg "github.com/lodeworks/lode/tool"
)

func TestBound(t *testing.T) {
	lines := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(strings.Repeat("x", 9))
			if i < n-1 {
				b.WriteByte('\n')
			}
		}
		return b.String()
	}
	cases := []struct {
		name              string
		in                string
		maxBytes, maxLine int
		cut               bool
		head, tail        string
	}{
		{"fits", "hello", 100, 10, false, "hello", "hello"},
		{"unlimited", strings.Repeat("a", 1000), -1, -1, false, "aaa", "aaa"},
		{"bytes", strings.Repeat("a", 50) + strings.Repeat("b", 50), 20, -1, true, strings.Repeat("a", 10) + "\n[…", "…]\n" + strings.Repeat("b", 10)},
		{"lines", lines(100), -1, 4, true, "xxxxxxxxx\nxxxxxxxxx\n\n[…", "…]\nxxxxxxxxx\nxxxxxxxxx"},
		{"utf8 kept whole", strings.Repeat("é", 100), 11, -1, true, "éé\n[…", "…]\nééé"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, cut := bound(c.in, c.maxBytes, c.maxLine)
			if cut != c.cut {
				t.Fatalf("cut = %v", cut)
			}
			if !strings.HasPrefix(got, c.head) || !strings.HasSuffix(got, c.tail) {
				t.Fatalf("bound = %q", got)
			}
			if strings.ToValidUTF8(got, "?") != got {
				t.Fatal("invalid UTF-8")
			}
		})
	}
}

func TestRenderPlainStringsUnquoted(t *testing.T) {
	for in, want := range map[any]string{
		"plain text":        "plain text",
		42:                  "42",
		true:                "true",
		nil:                 "",
		"<tag> & \"q\"":     `<tag> & "q"`,
		[2]string{"<", ">"}: `["<",">"]`,
	} {
		got, err := render(in, nil)
		if err != nil || got != want {
			t.Errorf("render(%#v) = %q, %v; want %q", in, got, err, want)
		}
	}
}

type (
	plainOut struct {
		Sum   int     `json:"sum"`
		Label string  `json:"label"`
		Ratio float64 `json:"ratio,omitempty"`
	}
	stringerOut  struct{ N int }
	marshalerOut struct{ N int }
)

func (s stringerOut) String() string                { return "n is " + strconv.Itoa(s.N) }
func (m marshalerOut) MarshalJSON() ([]byte, error) { return []byte(`"custom"`), nil }

// TestRenderPlainAgrees holds the results rendered without encoding/json to
// what encoding/json writes, and checks that what renderPlain must not take
// (a type with its own String or MarshalJSON, a value encoding/json
// refuses) goes the long way with the same outcome.
func TestRenderPlainAgrees(t *testing.T) {
	h := NewHandler(nil)
	cases := []struct {
		v     any
		plain bool // renderPlain takes it
		text  bool // render answers before asking renderPlain
	}{
		{v: plainOut{42, "answer <&> \u2028 \x01", 0}, plain: true},
		{v: &plainOut{Sum: -1, Label: "é", Ratio: 1e21}, plain: true},
		{v: (*plainOut)(nil), plain: true},
		{v: uint8(7), plain: true},
		{v: 1.5e-7, plain: true},
		{v: stringerOut{3}, text: true},
		{v: marshalerOut{3}},
		{v: plainOut{Ratio: math.NaN()}},
		{v: "text", text: true},
		{v: errors.New("boom"), text: true},
		{v: map[string]int{"a": 1}},
	}
	for _, c := range cases {
		want, wantErr := render(c.v, nil) // encoding/json alone
		got, gotErr := render(c.v, &h.plain)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%#v: render = %q, %v; encoding/json gives %q, %v", c.v, got, gotErr, want, wantErr)
		}
		var res artifact.ToolResult
		err := h.renderTo(&res, c.v, toolpkg.Budget{})
		if res.Content != want || (err == nil) != (wantErr == nil) {
			t.Errorf("%#v: renderTo = %q, %v; render = %q, %v", c.v, res.Content, err, want, wantErr)
		}
		if c.text {
			continue
		}
		if _, plain := renderPlain(c.v, &h.plain); plain != c.plain {
			t.Errorf("%#v: renderPlain took it: %v, want %v", c.v, plain, c.plain)
		}
	}
}
