package responses

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// withoutEvents is what eventFilter should pass of s, written the plain
// way: every line that starts with "event:" removed.
func withoutEvents(s string) string {
	var b strings.Builder
	lines := strings.SplitAfter(s, "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "event:") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// chunks reads s in pieces of the sizes given, cycling.
type chunks struct {
	s     []byte
	sizes []int
	i     int
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.s) == 0 {
		return 0, io.EOF
	}
	n := min(c.sizes[c.i%len(c.sizes)], len(p), len(c.s))
	c.i++
	copy(p, c.s[:n])
	c.s = c.s[n:]
	return n, nil
}

func (c *chunks) Close() error { return nil }

func filtered(t testing.TB, s string, sizes []int, readSize int) string {
	f := newEventFilter(&chunks{s: []byte(s), sizes: sizes}, 1000)
	var out bytes.Buffer
	p := make([]byte, readSize)
	for {
		n, err := f.Read(p)
		out.Write(p[:n])
		if err == io.EOF {
			return out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestEventFilter(t *testing.T) {
	cases := []string{
		string(stream(textAnswer("a", "b")...)),
		"event: x\ndata: {}\n\n",
		"data: {}\nevent: x",
		"eve\nevent\nevent:\nevents: y\n event: z\nEvent: w\n",
		"event: x\r\ndata: 1\r\n\r\n",
		": ping\n\nevent: a\nevent: b\ndata: 2\n",
		"",
		"event:",
		"ev",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		for _, sizes := range [][]int{{1}, {2, 3}, {5, 1, 7}, {1 << 20}, {rng.IntN(9) + 1, rng.IntN(9) + 1}} {
			for _, readSize := range []int{1, 3, 4096} {
				if got, want := filtered(t, c, sizes, readSize), withoutEvents(c); got != want {
					t.Fatalf("%q in pieces %v, read %d: got %q, want %q", c, sizes, readSize, got, want)
				}
			}
		}
	}
}

// TestEventFilterBound: past the limit of event lines in a row, they pass,
// for go-openai to count.
func TestEventFilterBound(t *testing.T) {
	in := strings.Repeat("event: x\n", 5) + "data: 1\n" + strings.Repeat("event: y\n", 3)
	f := newEventFilter(io.NopCloser(strings.NewReader(in)), 2)
	out, _ := io.ReadAll(f)
	want := strings.Repeat("event: x\n", 3) + "data: 1\n" + "event: y\n"
	if string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func FuzzEventFilter(f *testing.F) {
	f.Add([]byte("event: x\ndata: {}\n\n"), uint8(3))
	f.Add(stream(reasonedCalls()...), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, size uint8) {
		s := string(in)
		if got, want := filtered(t, s, []int{int(size%16) + 1}, 7), withoutEvents(s); got != want && strings.Count(s, "event:") < 1000 {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}
