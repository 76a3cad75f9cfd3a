package providertest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
)

// Holding is a handler that sends start as an event stream and then holds
// the stream open until the request or the test ends.
func Holding(t *testing.T, start string) http.Handler {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, start)
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})
}

// StopMidStream checks that an invocation of req whose server sends first
// and then holds the stream open (Holding) ends at once both when the
// consumer stops after first and when its context is cancelled, the
// latter with an error matching context.Canceled.
func StopMidStream(t *testing.T, p provider.Provider, req *provider.Request, first artifact.Artifact) {
	t.Helper()
	t.Run("consumer stops", func(t *testing.T) {
		n := 0
		for a, err := range p.Invoke(context.Background(), req) {
			if err != nil || a != first {
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
		for a, err := range p.Invoke(ctx, req) {
			if err != nil {
				last = err
				continue
			}
			if a == first {
				cancel()
			}
		}
		if !errors.Is(last, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", last)
		}
	})
}
