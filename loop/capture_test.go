package loop_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

type sayNo struct{}

func (sayNo) Name() string { return "say-no" }
func (sayNo) Check(_ context.Context, c loop.Check) error {
	if c.At == artifact.AtOutput && strings.Contains(c.Text, "FORBIDDEN") {
		return loop.Trip("say-no", "forbidden")
	}
	return nil
}

// ContentEvents come when capture is on (by option or by context), and
// never for an answer a guard stopped.
func TestContentEvents(t *testing.T) {
	cases := []struct {
		name   string
		opt    capture.Config
		ctx    capture.Config
		answer string
		want   int
	}{
		{"off", capture.Config{}, capture.Config{}, "ok", 0},
		{"by option", capture.Config{On: true}, capture.Config{}, "ok", 1},
		{"by context", capture.Config{}, capture.Config{On: true}, "ok", 1},
		{"stopped", capture.Config{On: true}, capture.Config{}, "FORBIDDEN", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []loop.ContentEvent
			obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
				if ev, ok := ev.(loop.ContentEvent); ok {
					mu.Lock()
					got = append(got, ev)
					mu.Unlock()
				}
			})
			step := loop.New(loop.WithCapture(c.opt), loop.WithObserver(obs), loop.WithGuards(sayNo{}))
			th := ledger.NewThread()
			_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
			ctx := capture.With(t.Context(), c.ctx)
			_, err := step.Run(ctx, th, script.Play(script.Text(c.answer)))
			if c.answer == "FORBIDDEN" != errors.Is(err, loop.ErrTripped) {
				t.Fatalf("run = %v", err)
			}
			if err := step.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != c.want {
				t.Fatalf("%d content events, want %d", len(got), c.want)
			}
			for _, ev := range got {
				if strings.Contains(ev.OutputMessages, "FORBIDDEN") || !strings.Contains(ev.InputMessages, `"hi"`) {
					t.Errorf("event = %+v", ev)
				}
			}
		})
	}
}
