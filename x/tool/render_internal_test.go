package tool

import (
	"strings"
	"testing"
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
		got, err := render(in)
		if err != nil || got != want {
			t.Errorf("render(%#v) = %q, %v; want %q", in, got, err, want)
		}
	}
}
