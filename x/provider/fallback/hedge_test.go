package fallback_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/fallback"
)

type result struct {
	arts []artifact.Artifact
	err  error
}

// hedged starts reading p's answer in a goroutine.
func start(ctx context.Context, p *fallback.Provider) <-chan result {
	ch := make(chan result, 1)
	go func() {
		arts, err := collect(p.Invoke(ctx, req))
		ch <- result{arts, err}
	}()
	return ch
}

// counted makes fakes that count how many run at once.
func counted(fs ...*fake) *atomic.Int32 {
	running, max := new(atomic.Int32), new(atomic.Int32)
	for _, f := range fs {
		f.running, f.maxRun = running, max
		f.started = make(chan struct{})
	}
	return max
}

func hedgedProvider(t *testing.T, clock *fakeClock, fs ...*fake) *fallback.Provider {
	t.Helper()
	provs := make([]provider.Provider, len(fs))
	for i, f := range fs {
		provs[i] = f
	}
	p, err := fallback.New(provs, fallback.WithHedge(time.Second), fallback.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The answering attempt's Usage comes last; a hedged loser's before it.
func bAnswer(extra ...artifact.Artifact) []artifact.Artifact {
	arts := []artifact.Artifact{artifact.TextDelta{Content: "b"}, artifact.Text{Content: "b"}, artifact.Finish{Reason: "stop"}}
	arts = append(arts, extra...)
	return append(arts, artifact.Usage{InputTokens: 10, OutputTokens: 2})
}

func TestHedgeAnswersWhenTheFirstIsSlow(t *testing.T) {
	never := make(chan struct{})
	leak := artifact.Text{Content: "from the loser"}
	first := newFake("a", step{wait: never, afterCancel: []artifact.Artifact{leak, artifact.Usage{InputTokens: 5}}})
	second := newFake("b", answer("b", 10, 2)...)
	third := newFake("c", answer("c", 1, 1)...)
	max := counted(first, second, third)
	clock := newFakeClock()
	res := start(context.Background(), hedgedProvider(t, clock, first, second, third))
	<-first.started
	clock.fire()
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	// Nothing of the loser but its usage reaches the caller.
	if want := bAnswer(artifact.Usage{InputTokens: 5}); !reflect.DeepEqual(unmodel(r.arts), want) {
		t.Errorf("artifacts = %#v\nwant %#v", r.arts, want)
	}
	<-first.cancelled
	if n := third.calls.Load(); n != 0 {
		t.Errorf("third called %d times", n)
	}
	if m := max.Load(); m != 2 {
		t.Errorf("%d attempts ran at once, want 2", m)
	}
	if n := clock.armed(); n != 0 {
		t.Errorf("%d timers left armed", n)
	}
}

func TestHedgeNotNeeded(t *testing.T) {
	first := newFake("a", answer("b", 10, 2)...)
	second := newFake("b", answer("x", 1, 1)...)
	clock := newFakeClock()
	r := <-start(context.Background(), hedgedProvider(t, clock, first, second))
	if r.err != nil || !reflect.DeepEqual(unmodel(r.arts), bAnswer()) {
		t.Fatalf("got %#v, %v", r.arts, r.err)
	}
	if n := second.calls.Load(); n != 0 {
		t.Errorf("second called %d times", n)
	}
	if clock.stopped.Load() == 0 {
		t.Error("the hedge timer was not stopped")
	}
}

func TestHedgeLosesToTheFirst(t *testing.T) {
	gate, never := make(chan struct{}), make(chan struct{})
	first := newFake("a", append([]step{{wait: gate}}, answer("b", 10, 2)...)...)
	second := newFake("b", step{wait: never, afterCancel: []artifact.Artifact{artifact.Text{Content: "leak"}}})
	counted(first, second)
	clock := newFakeClock()
	res := start(context.Background(), hedgedProvider(t, clock, first, second))
	clock.fire()
	<-second.started
	close(gate)
	r := <-res
	if r.err != nil || !reflect.DeepEqual(unmodel(r.arts), bAnswer()) {
		t.Fatalf("got %#v, %v", r.arts, r.err)
	}
	<-second.cancelled
}

// A failure while the hedge runs leaves the hedge alone in flight; it is
// hedged in turn, never with more than two attempts at once.
func TestHedgeAtMostTwoInFlight(t *testing.T) {
	never, fail := make(chan struct{}), make(chan struct{})
	first := newFake("a", step{wait: never})
	second := newFake("b", step{wait: fail}, step{err: &statusErr{503}})
	third := newFake("c", answer("b", 10, 2)...)
	max := counted(first, second, third)
	clock := newFakeClock()
	res := start(context.Background(), hedgedProvider(t, clock, first, second, third))
	<-first.started // in flight before the hedge, however the goroutines are scheduled
	clock.fire()
	<-second.started
	if n := clock.armed(); n != 0 {
		t.Fatalf("a timer is armed with two attempts in flight")
	}
	close(fail)
	clock.fire()
	r := <-res
	if r.err != nil || !reflect.DeepEqual(unmodel(r.arts), bAnswer()) {
		t.Fatalf("got %#v, %v", r.arts, r.err)
	}
	<-first.cancelled
	if m := max.Load(); m != 2 {
		t.Errorf("%d attempts ran at once, want 2", m)
	}
	for _, f := range []*fake{first, second, third} {
		if n := f.calls.Load(); n != 1 {
			t.Errorf("%s called %d times", f.model, n)
		}
	}
}

// A failure with nothing else in flight starts the next provider at once.
func TestHedgeFailureFallsBackAtOnce(t *testing.T) {
	first := newFake("a", step{art: artifact.Usage{InputTokens: 4}}, step{err: &statusErr{429}})
	second := newFake("b", answer("b", 10, 2)...)
	r := <-start(context.Background(), hedgedProvider(t, newFakeClock(), first, second))
	want := append([]artifact.Artifact{artifact.Usage{InputTokens: 4}}, bAnswer()...)
	if r.err != nil || !reflect.DeepEqual(unmodel(r.arts), want) {
		t.Fatalf("got %#v, %v", r.arts, r.err)
	}
}

func TestHedgeAllFail(t *testing.T) {
	gate := make(chan struct{})
	e1, e2 := &statusErr{503}, &statusErr{500}
	first := newFake("a", step{wait: gate}, step{err: e1})
	second := newFake("b", step{err: e2, do: func() { close(gate) }})
	clock := newFakeClock()
	res := start(context.Background(), hedgedProvider(t, clock, first, second))
	clock.fire()
	r := <-res
	var fe *fallback.Error
	if !errors.As(r.err, &fe) || !errors.Is(r.err, e1) || !errors.Is(r.err, e2) || !errors.Is(r.err, fallback.ErrExhausted) {
		t.Fatalf("err = %v", r.err)
	}
	// The two fail at about the same time: either may be seen first.
	if len(fe.Attempts) != 2 || fe.Attempts[0].Err == fe.Attempts[1].Err {
		t.Errorf("attempts: %v", fe.Attempts)
	}
}

// A failure that does not fall back ends the invocation, cancelling the
// other attempt.
func TestHedgeRefusalStopsTheOther(t *testing.T) {
	never := make(chan struct{})
	e400 := &statusErr{400}
	first := newFake("a", step{wait: never})
	second := newFake("b", step{err: e400})
	counted(first, second)
	clock := newFakeClock()
	res := start(context.Background(), hedgedProvider(t, clock, first, second))
	clock.fire()
	r := <-res
	if r.err != e400 {
		t.Fatalf("err = %#v, want the refusal as it is", r.err)
	}
	<-first.cancelled
}

func TestHedgeCallerCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	never := make(chan struct{})
	first := newFake("a", step{do: cancel}, step{wait: never})
	second := newFake("b", answer("b", 1, 1)...)
	r := <-start(ctx, hedgedProvider(t, newFakeClock(), first, second))
	if !errors.Is(r.err, context.Canceled) || len(r.arts) != 0 {
		t.Fatalf("got %v, %v", r.arts, r.err)
	}
	if n := second.calls.Load(); n != 0 {
		t.Errorf("second called %d times", n)
	}
}

// A caller that stops reading the answer leaves no attempt running: the
// stream ends only once both goroutines have.
func TestHedgeCallerBreak(t *testing.T) {
	never := make(chan struct{})
	first := newFake("a", step{wait: never})
	second := newFake("b", answer("b", 1, 1)...)
	clock := newFakeClock()
	p := hedgedProvider(t, clock, first, second)
	go clock.fire()
	for a, err := range p.Invoke(context.Background(), req) {
		if err != nil || a != (artifact.TextDelta{Content: "b"}) {
			t.Fatalf("got %v, %v", a, err)
		}
		break
	}
	<-first.cancelled
	goleak.VerifyNone(t)
}

// A provider that panics in its goroutine fails its attempt instead of the
// program.
func TestHedgePanic(t *testing.T) {
	first := newFake("a", step{do: func() { panic("boom") }})
	second := newFake("b", answer("b", 10, 2)...)
	r := <-start(context.Background(), hedgedProvider(t, newFakeClock(), first, second,
		newFake("c", answer("c", 1, 1)...)))
	if r.err == nil || r.err.Error() != "fallback: provider 0 panicked: boom" {
		t.Fatalf("got %v, %v", r.arts, r.err)
	}
}

// The winner failing after its answer started: its error as it is, after
// the loser's usage; nothing falls back.
func TestHedgeWinnerFailsAfterStarting(t *testing.T) {
	never := make(chan struct{})
	e503 := &statusErr{503}
	first := newFake("a", step{wait: never, afterCancel: []artifact.Artifact{artifact.Usage{InputTokens: 5}}})
	second := newFake("b", step{art: artifact.TextDelta{Content: "b"}}, step{err: e503})
	third := newFake("c", answer("c", 1, 1)...)
	counted(first, second, third)
	clock := newFakeClock()
	res := start(context.Background(), hedgedProvider(t, clock, first, second, third))
	<-first.started
	clock.fire()
	r := <-res
	want := []artifact.Artifact{artifact.TextDelta{Content: "b"}, artifact.Usage{InputTokens: 5}}
	if r.err != e503 || !reflect.DeepEqual(unmodel(r.arts), want) {
		t.Fatalf("got %#v, %#v", r.arts, r.err)
	}
	if n := third.calls.Load(); n != 0 {
		t.Errorf("third called %d times", n)
	}
}

// unmodel drops the model names the wrapper gives each attempt's usage
// (checked in TestEventsAndUsageThroughTheLoop), for answers compared
// whole.
func unmodel(arts []artifact.Artifact) []artifact.Artifact {
	if arts == nil {
		return nil
	}
	out := make([]artifact.Artifact, len(arts))
	for i, a := range arts {
		if u, ok := a.(artifact.Usage); ok {
			u.Model = ""
			a = u
		}
		out[i] = a
	}
	return out
}
