package loop

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/provider"
)

// chunks streams each chunk as a text delta, then their whole text; with
// forever it streams "x" until ctx ends and then fails with ctx's error.
type chunks struct {
	parts   []string
	forever bool
}

func (c chunks) Invoke(ctx context.Context, _ *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		if c.forever {
			for ctx.Err() == nil {
				if !yield(artifact.TextDelta{Content: "x"}, nil) {
					return
				}
			}
			yield(nil, ctx.Err())
			return
		}
		for _, p := range c.parts {
			if !yield(artifact.TextDelta{Content: p}, nil) {
				return
			}
		}
		yield(artifact.Text{Content: strings.Join(c.parts, "")}, nil)
	}
}

// gated is an observer that takes one event per token and records what
// it took.
type gated struct {
	tokens chan struct{}
	mu     sync.Mutex
	events []Event
}

func (g *gated) Emit(_ context.Context, ev Event) {
	<-g.tokens
	g.mu.Lock()
	g.events = append(g.events, ev)
	g.mu.Unlock()
}

func (g *gated) text() (deltas string, last Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	for _, ev := range g.events {
		if d, ok := ev.(DeltaEvent); ok {
			b.WriteString(d.Delta.(artifact.TextDelta).Content)
		}
	}
	if len(g.events) > 0 {
		last = g.events[len(g.events)-1]
	}
	return b.String(), last
}

// watch records the most the mailbox ever held and signals full once it
// holds as many events as full says.
type watch struct {
	mu        sync.Mutex
	maxHeld   int
	maxBytes  int
	overBytes []int // held when bytes exceeded the byte bound
	full      chan struct{}
	once      sync.Once
}

func (w *watch) hook(fullAt, byteBound int) func(held, bytes int) {
	return func(held, bytes int) {
		w.mu.Lock()
		w.maxHeld = max(w.maxHeld, held)
		w.maxBytes = max(w.maxBytes, bytes)
		if byteBound > 0 && bytes > byteBound {
			w.overBytes = append(w.overBytes, held)
		}
		w.mu.Unlock()
		if held >= fullAt {
			w.once.Do(func() { close(w.full) })
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// waiting returns a hook for mailbox.onWait and a channel closed when a
// post first waits.
func waiting() (func(), <-chan struct{}) {
	ch := make(chan struct{})
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }, ch
}

func userThread() *ledger.Thread {
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "go"})
	return th
}

// TestObserverBufferBound runs turns through an observer that takes one
// event per token, handed out only once its mailbox is full: the mailbox
// never holds more than its bound, the turn waits instead, and the
// observer still gets every delta and then the turn-complete event.
func TestObserverBufferBound(t *testing.T) {
	cases := []struct {
		name           string
		events, bytes  int
		parts          []string
		fullAt         int // held events that show the bound was reached
		wantMaxHeld    int // at most: with a byte bound, the count varies
		wantMaxBytes   int
		oversizedAlone bool // a delta above the byte bound is queued alone
	}{
		{name: "events", events: 8, bytes: -1, parts: repeat("abcde", 200), fullAt: 8, wantMaxHeld: 8, wantMaxBytes: 40},
		{name: "bytes", events: -1, bytes: 25, parts: repeat("0123456789", 100), fullAt: 2, wantMaxHeld: 3, wantMaxBytes: 20},
		{name: "one event", events: 1, bytes: -1, parts: repeat("z", 50), fullAt: 1, wantMaxHeld: 1, wantMaxBytes: 1},
		{name: "oversized delta", events: -1, bytes: 25, parts: append(repeat("0123456789", 10), strings.Repeat("L", 100), "tail"), fullAt: 2, wantMaxHeld: 3, wantMaxBytes: 100, oversizedAlone: true},
		{name: "defaults", parts: repeat("y", 3*DefaultObserverBuffer), fullAt: DefaultObserverBuffer, wantMaxHeld: DefaultObserverBuffer, wantMaxBytes: DefaultObserverBuffer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := &gated{tokens: make(chan struct{})}
			s := New(WithObserver(obs), WithObserverBuffer(c.events), WithObserverBufferBytes(c.bytes))
			w := &watch{full: make(chan struct{})}
			_, byteBound := s.observerBuf.limits()
			s.observers[0].onQueue = w.hook(c.fullAt, byteBound)
			done := make(chan error, 1)
			go func() {
				_, err := s.Turn(context.Background(), userThread(), chunks{parts: c.parts})
				done <- err
			}()
			<-w.full
			// Now feed the observer until the turn is over and everything
			// it posted is delivered.
			stop := make(chan struct{})
			fed := make(chan struct{})
			go func() {
				defer close(fed)
				for {
					select {
					case obs.tokens <- struct{}{}:
					case <-stop:
						return
					}
				}
			}()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			close(stop)
			<-fed
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.maxHeld > c.wantMaxHeld || w.maxBytes != c.wantMaxBytes {
				t.Errorf("the mailbox held at most %d events and %d bytes, want at most %d and exactly %d", w.maxHeld, w.maxBytes, c.wantMaxHeld, c.wantMaxBytes)
			}
			if c.oversizedAlone {
				if len(w.overBytes) != 1 || w.overBytes[0] != 1 {
					t.Errorf("over the byte bound with %v events held, want once with 1 (the oversized delta alone)", w.overBytes)
				}
			} else if len(w.overBytes) != 0 {
				t.Errorf("over the byte bound with %v events held", w.overBytes)
			}
			text, last := obs.text()
			if want := strings.Join(c.parts, ""); text != want {
				t.Errorf("the observer got %d bytes of deltas, want %d", len(text), len(want))
			}
			if tc, ok := last.(TurnCompleteEvent); !ok || tc.Role != ledger.RoleAssistant {
				t.Errorf("last event %#v, want the assistant's TurnCompleteEvent", last)
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestObserverBufferCancelWhileBlocked stops a run whose stream waits on
// an observer that takes nothing: Run returns, the waiting delta is
// dropped rather than queued past the bound, and the error event that
// ends the turn is queued all the same and delivered once the observer
// goes on.
func TestObserverBufferCancelWhileBlocked(t *testing.T) {
	const bound = 4
	obs := &gated{tokens: make(chan struct{})}
	s := New(WithObserver(obs), WithObserverBuffer(bound))
	w := &watch{full: make(chan struct{})}
	s.observers[0].onQueue = w.hook(bound, 0)
	hook, blocked := waiting()
	s.observers[0].onWait = hook
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(ctx, userThread(), chunks{forever: true})
		done <- err
	}()
	<-blocked
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	close(obs.tokens)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.events) != bound+1 {
		t.Fatalf("the observer got %d events, want the %d deltas that fit and the error", len(obs.events), bound)
	}
	for i, ev := range obs.events[:bound] {
		if _, ok := ev.(DeltaEvent); !ok {
			t.Errorf("event %d is %s, want a delta", i, ev.EventName())
		}
	}
	if e, ok := obs.events[bound].(ErrorEvent); !ok || !errors.Is(e.Err, context.Canceled) {
		t.Errorf("last event %#v, want the ErrorEvent of the cancelled turn", obs.events[bound])
	}
	if w.maxHeld != bound+1 {
		t.Errorf("the mailbox held at most %d events, want %d: the bound and the error event", w.maxHeld, bound+1)
	}
}

// TestObserverBufferPanics: an observer that panics on every event still
// frees its room, so the turn ends and a second observer gets everything.
func TestObserverBufferPanics(t *testing.T) {
	var mu sync.Mutex
	var text strings.Builder
	var last Event
	good := EmitterFunc(func(_ context.Context, ev Event) {
		mu.Lock()
		defer mu.Unlock()
		if d, ok := ev.(DeltaEvent); ok {
			text.WriteString(d.Delta.(artifact.TextDelta).Content)
		}
		last = ev
	})
	bad := EmitterFunc(func(context.Context, Event) { panic("observer bug") })
	s := New(WithLogger(discard()), WithObserver(bad), WithObserver(good), WithObserverBuffer(1))
	parts := repeat("p", 100)
	if _, err := s.Turn(context.Background(), userThread(), chunks{parts: parts}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if text.String() != strings.Join(parts, "") {
		t.Errorf("the good observer got %q", text.String())
	}
	if _, ok := last.(TurnCompleteEvent); !ok {
		t.Errorf("last event %#v, want TurnCompleteEvent", last)
	}
}

type echoEvent struct{ n int }

func (echoEvent) EventName() string { return "test_echo" }

// TestObserverBufferObserverNotifies: an observer that posts back with
// Notify, using the ctx it was given, while its own mailbox is full is
// not made to wait on itself.
func TestObserverBufferObserverNotifies(t *testing.T) {
	const posts = 20
	var mu sync.Mutex
	var echoes, progress int
	var s *Step
	obs := EmitterFunc(func(ctx context.Context, ev Event) {
		switch ev.(type) {
		case progressEvent:
			// The mailbox holds this event and possibly more: a bound
			// of one is full, and a post that waited would wait forever.
			Notify(ctx, echoEvent{})
			mu.Lock()
			progress++
			mu.Unlock()
		case echoEvent:
			mu.Lock()
			echoes++
			mu.Unlock()
		}
	})
	h := HandlerFunc(func(ctx context.Context, a artifact.Artifact, e Emitter) error {
		if _, ok := a.(artifact.Text); !ok {
			return nil
		}
		for i := range posts {
			Notify(ctx, progressEvent{i})
		}
		// Hold the turn open until the observer has echoed every post,
		// so that each of its Notify calls finds the turn running.
		return s.Flush(ctx)
	})
	s = New(WithHandlers(h), WithObserver(obs), WithObserverBuffer(1))
	if _, err := s.Turn(context.Background(), userThread(), chunks{parts: []string{"hi"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if progress != posts || echoes != posts {
		t.Errorf("the observer got %d progress events and %d echoes, want %d of each", progress, echoes, posts)
	}
}

type progressEvent struct{ n int }

func (progressEvent) EventName() string { return "test_progress" }

// TestObserverBufferSlowDoesNotHoldFast: while a stuck observer's full
// mailbox holds the turn, another observer has already been given every
// event posted so far.
func TestObserverBufferSlowDoesNotHoldFast(t *testing.T) {
	const bound = 4
	slow := &gated{tokens: make(chan struct{})}
	var mu sync.Mutex
	var fast int
	s := New(WithObserver(slow), WithObserver(EmitterFunc(func(context.Context, Event) {
		mu.Lock()
		fast++
		mu.Unlock()
	})), WithObserverBuffer(bound))
	hook, blocked := waiting()
	s.observers[0].onWait = hook
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Turn(ctx, userThread(), chunks{forever: true})
		done <- err
	}()
	<-blocked
	// The stream has posted bound deltas to both and waits on the slow
	// one, which comes first, for the next; the fast one has them all.
	if err := s.observers[1].wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := fast
	mu.Unlock()
	if got != bound {
		t.Errorf("the fast observer got %d events while the slow one held the turn, want %d", got, bound)
	}
	cancel()
	<-done
	close(slow.tokens)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestObserverFlushesFromInside: an observer that calls Flush with its ctx
// waits for the other observers, not for itself.
func TestObserverFlushesFromInside(t *testing.T) {
	var s *Step
	other := &gated{tokens: make(chan struct{}, 1000)}
	flushed := make(chan error, 100)
	obs := EmitterFunc(func(ctx context.Context, ev Event) {
		if _, ok := ev.(TurnCompleteEvent); ok {
			flushed <- s.Flush(ctx)
		}
	})
	s = New(WithObserver(obs), WithObserver(other), WithObserverBuffer(2))
	for range 1000 {
		other.tokens <- struct{}{}
	}
	if _, err := s.Turn(context.Background(), userThread(), chunks{parts: repeat("q", 10)}); err != nil {
		t.Fatal(err)
	}
	if err := <-flushed; err != nil {
		t.Fatalf("Flush from inside an observer = %v", err)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if text, last := other.text(); text != strings.Repeat("q", 10) || last == nil {
		t.Errorf("the other observer got %q", text)
	}
}
