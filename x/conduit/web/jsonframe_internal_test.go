package web

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// A delta frame is byte for byte frame's encoding of the same part, for
// any text a model can send: quotes, backslashes, control
// characters, line separators, invalid UTF-8, emoji. Its capacity is its
// length, as the stream's byte count assumes.
func checkDeltaFrame(t *testing.T, delta string) {
	t.Helper()
	got := deltaFrame("text-delta", "id", "text-1", "delta", delta)
	if len(got) != cap(got) {
		t.Fatalf("%q: frame of %d bytes in %d of capacity", delta, len(got), cap(got))
	}
	if !bytes.HasPrefix(got, []byte("data: ")) || !bytes.HasSuffix(got, []byte("\n\n")) || bytes.Count(got, []byte("\n")) != 2 {
		t.Fatalf("%q: not one event: %q", delta, got)
	}
	want := frame(map[string]string{"type": "text-delta", "id": "text-1", "delta": delta})
	if !bytes.Equal(got, want) {
		t.Fatalf("%q: %q, want %q as encoding/json writes it", delta, got, want)
	}
	var part map[string]string
	if err := json.Unmarshal(got[len("data: "):len(got)-2], &part); err != nil || len(part) != 3 {
		t.Fatalf("%q: %q is not the part: %v", delta, got, err)
	}
	if strings.ContainsAny(string(got), "\u2028\u2029") {
		t.Fatalf("%q: a raw line separator in %q", delta, got)
	}
}

func TestDeltaFrame(t *testing.T) {
	for _, delta := range []string{
		"", "plain", `say "hi"`, `C:\path\`, "two\nlines\r\n", "\ttab", "\x00\x01\b\f\x1f\x7f",
		"sep\u2028para\u2029", "bad \xff\xfe utf-8", "cut \xe2\x82", "héllo wörld", "日本語", "🙂👍🏽",
		"</script><b>&amp;", strings.Repeat(`\"`, 100),
	} {
		checkDeltaFrame(t, delta)
	}
}

func FuzzDeltaFrame(f *testing.F) {
	for _, s := range []string{"", "x", "\"\\\n", "\u2028", "\xff", "日本"} {
		f.Add(s)
	}
	f.Fuzz(checkDeltaFrame)
}

func TestToolInputDeltaFrame(t *testing.T) {
	got := deltaFrame("tool-input-delta", "toolCallId", "call_1", "inputTextDelta", `{"q":"<a&b>"}`)
	want := frame(map[string]string{"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": `{"q":"<a&b>"}`})
	if !bytes.Equal(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
}
