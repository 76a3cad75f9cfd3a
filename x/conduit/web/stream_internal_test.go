package web

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
)

// A browser that reads nothing holds at most the buffer's parts; then it
// loses the stream, is told so in one error part, and the pump reports it.
func TestSlowBrowserLosesTheStream(t *testing.T) {
	s := newStream(4, "m1", "t1")
	for range 1000 {
		s.Emit(context.Background(), loop.DeltaEvent{Delta: artifact.TextDelta{Content: "x"}})
	}
	s.end(nil, nil)
	if n := len(s.frames); n > 4 {
		t.Fatalf("%d parts queued, want at most 4", n)
	}
	select {
	case <-s.lost:
	default:
		t.Fatal("the stream is not marked lost")
	}
	// Drain what was queued, as a browser catching up would: then only
	// the lost signal is left.
	for range s.frames {
	}
	rec := httptest.NewRecorder()
	if s.pump(context.Background(), rec) {
		t.Fatal("pump reported a whole stream")
	}
	want := `data: {"type":"error","errorText":"web: this browser fell behind the stream; reload the thread to see the rest"}` + "\n\n"
	if got := rec.Body.String(); !strings.HasSuffix(got, want) {
		t.Errorf("body %q, want it to end with %q", got, want)
	}
}
