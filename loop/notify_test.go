package loop_test

import (
	"context"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/provider/script"
)

type progressEvent struct{ n int }

func (progressEvent) EventName() string { return "test_progress" }

// TestNotify checks that an event posted with loop.Notify from a handler
// reaches the observers between the turn's other events, and that a post
// after the turn, or from a context no turn gave, delivers nothing.
func TestNotify(t *testing.T) {
	var (
		mu    sync.Mutex
		names []string
	)
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if _, ok := ev.(loop.DeltaEvent); ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		names = append(names, ev.EventName())
	})
	var kept context.Context
	h := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if _, ok := a.(artifact.ToolCall); !ok {
			return nil
		}
		kept = ctx
		if !loop.Notify(ctx, progressEvent{1}) {
			t.Error("Notify in a handler returned false")
		}
		if loop.Notify(ctx, nil) {
			t.Error("Notify of a nil event returned true")
		}
		return echoTools(ctx, a, e)
	})
	step := loop.New(loop.WithHandlers(h), loop.WithObserver(obs))
	prov := script.Play(script.Call("1", "t", "{}"), script.Text("done"))
	if _, err := step.Run(context.Background(), userThread("go"), prov); err != nil {
		t.Fatal(err)
	}
	if kept == nil {
		t.Fatal("the handler never ran")
	}
	if loop.Notify(kept, progressEvent{2}) {
		t.Error("Notify after the turn returned true")
	}
	if loop.Notify(context.Background(), progressEvent{3}) {
		t.Error("Notify outside a turn returned true")
	}
	if err := step.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"turn_complete", "test_progress", "turn_complete", "turn_complete"}
	if len(names) != len(want) {
		t.Fatalf("observer saw %q, want %q", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("observer saw %q, want %q", names, want)
		}
	}
}

// notifying posts an event with loop.Notify from inside its stream, and
// keeps its context so that the test can post again after the stream.
type notifying struct {
	ctx    context.Context
	posted bool
}

func (p *notifying) Invoke(ctx context.Context, _ *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		p.ctx = ctx
		p.posted = loop.Notify(ctx, progressEvent{n: 1})
		yield(artifact.Text{Content: "done"}, nil)
	}
}

// A provider reaches the turn's observers with Notify while its stream
// runs, in order before the answer's turn_complete; after its stream,
// or in a Step without observers, Notify posts nothing.
func TestNotifyFromAProvider(t *testing.T) {
	var (
		mu    sync.Mutex
		names []string
	)
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		mu.Lock()
		defer mu.Unlock()
		names = append(names, ev.EventName())
	})
	p := &notifying{}
	step := loop.New(loop.WithObserver(obs))
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleUser, artifact.Text{Content: "hi"})
	if _, err := step.Turn(context.Background(), th, p); err != nil {
		t.Fatal(err)
	}
	if !p.posted {
		t.Error("Notify from the provider returned false")
	}
	if loop.Notify(p.ctx, progressEvent{n: 2}) {
		t.Error("Notify after the stream returned true")
	}
	_ = step.Flush(context.Background())
	mu.Lock()
	if got := strings.Join(names, " "); got != "test_progress turn_complete" {
		t.Errorf("events = %s", got)
	}
	mu.Unlock()

	q := &notifying{}
	if _, err := loop.New().Turn(context.Background(), th, q); err != nil {
		t.Fatal(err)
	}
	if q.posted {
		t.Error("Notify posted in a Step without observers")
	}
}

// WithTurn gives a handler run apart from its turn what a loop turn gives
// it: the turn and the place of its artifact; Notify posts nothing there.
func TestWithTurn(t *testing.T) {
	st := ledger.NewThread()
	answer := []artifact.Artifact{artifact.Text{Content: "two calls"}, artifact.ToolCall{ID: "c1"}, artifact.ToolCall{ID: "c2"}}
	ctx := loop.WithTurn(context.Background(), loop.TurnInfo{State: st, Answer: answer}, 2)
	turn, ok := loop.CurrentTurn(ctx)
	if !ok || turn.State != st || len(turn.Answer) != 3 || turn.Request != nil {
		t.Fatalf("turn %+v, %v", turn, ok)
	}
	if i, ok := loop.ArtifactIndex(ctx); !ok || i != 2 {
		t.Fatalf("index %d, %v", i, ok)
	}
	if loop.Notify(ctx, loop.ErrorEvent{}) {
		t.Fatal("Notify posted with no turn running")
	}
}
