package fallback_test

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// step is one thing a fake provider does: wait for a channel (or its
// context), call a hook, then yield an artifact or fail.
type step struct {
	wait <-chan struct{}
	do   func()
	art  artifact.Artifact
	err  error
	// afterCancel, when the wait ends by cancellation, is yielded before
	// the context's error: a provider that keeps talking after it was
	// told to stop.
	afterCancel []artifact.Artifact
}

// fake is a scripted provider. It counts its invocations, how many run at
// once, and whether it saw its context cancelled.
type fake struct {
	model string
	steps []step

	calls     atomic.Int32
	running   *atomic.Int32 // shared by the fakes of a test, may be nil
	maxRun    *atomic.Int32
	cancelled chan struct{}
	once      sync.Once
	started   chan struct{} // closed at the first invocation, when set
}

func newFake(model string, steps ...step) *fake {
	return &fake{model: model, steps: steps, cancelled: make(chan struct{})}
}

func (f *fake) Model() string { return f.model }

func (f *fake) Invoke(ctx context.Context, _ *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		f.calls.Add(1)
		if f.running != nil {
			n := f.running.Add(1)
			defer f.running.Add(-1)
			for {
				m := f.maxRun.Load()
				if n <= m || f.maxRun.CompareAndSwap(m, n) {
					break
				}
			}
		}
		if f.started != nil {
			close(f.started)
		}
		for _, s := range f.steps {
			if s.wait != nil {
				select {
				case <-s.wait:
				case <-ctx.Done():
					f.once.Do(func() { close(f.cancelled) })
					for _, a := range s.afterCancel {
						yield(a, nil)
					}
					yield(nil, fmt.Errorf("fake %s: %w", f.model, ctx.Err()))
					return
				}
			}
			if s.do != nil {
				s.do()
			}
			if s.err != nil {
				yield(nil, s.err)
				return
			}
			if s.art != nil && !yield(s.art, nil) {
				return
			}
		}
	}
}

// answer is the steps of a whole text answer with usage.
func answer(text string, in, out int64) []step {
	return []step{
		{art: artifact.TextDelta{Content: text}},
		{art: artifact.Text{Content: text}},
		{art: artifact.Usage{InputTokens: in, OutputTokens: out}},
		{art: artifact.Finish{Reason: "stop"}},
	}
}

// statusErr is an error with an HTTP status, as the adapters' are.
type statusErr struct{ status int }

func (e *statusErr) Error() string   { return fmt.Sprintf("fake: status %d", e.status) }
func (e *statusErr) HTTPStatus() int { return e.status }

// collect reads a whole stream.
func collect(seq iter.Seq2[artifact.Artifact, error]) ([]artifact.Artifact, error) {
	var arts []artifact.Artifact
	for a, err := range seq {
		if err != nil {
			return arts, err
		}
		arts = append(arts, a)
	}
	return arts, nil
}

// fakeClock hands each timer to the test, which fires it by sending.
type fakeClock struct {
	timers  chan chan time.Time
	stopped atomic.Int32
}

func newFakeClock() *fakeClock { return &fakeClock{timers: make(chan chan time.Time, 16)} }

func (c *fakeClock) Timer(time.Duration) (<-chan time.Time, func() bool) {
	ch := make(chan time.Time, 1)
	c.timers <- ch
	return ch, func() bool { c.stopped.Add(1); return true }
}

// fire waits for the next timer to be armed, and fires it.
func (c *fakeClock) fire() {
	ch := <-c.timers
	ch <- time.Time{}
}

// armed reports how many timers were armed and not yet fired.
func (c *fakeClock) armed() int { return len(c.timers) }

var req = &provider.Request{}
