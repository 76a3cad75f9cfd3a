package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/lodeworks/lode/artifact"
)

// A server that sends the start of an answer and then holds the stream
// open: a cancelled context and a consumer that stops both end the
// invocation at once.
func TestStopMidStream(t *testing.T) {
	hold := make(chan struct{})
	f := newFake(t)
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sse(msgStart(`{"input_tokens":1,"output_tokens":1}`), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, textDelta("a"))).body)
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(hold) })
	p := f.provider(t)

	t.Run("consumer stops", func(t *testing.T) {
		n := 0
		for a, err := range p.Invoke(context.Background(), req(userTurn("x"))) {
			if err != nil || a != (artifact.TextDelta{Content: "a"}) {
				t.Fatalf("got %v, %v", a, err)
			}
			n++
			break
		}
		if n != 1 {
			t.Fatalf("%d artifacts", n)
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var last error
		for a, err := range p.Invoke(ctx, req(userTurn("x"))) {
			if err != nil {
				last = err
				continue
			}
			if a == (artifact.TextDelta{Content: "a"}) {
				cancel()
			}
		}
		if !errors.Is(last, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", last)
		}
	})
}
