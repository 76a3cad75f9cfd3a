package output_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/output"
	"github.com/lodeworks/lode/x/provider/script"
)

type recorder struct {
	mu     sync.Mutex
	events []loop.Event
}

func (r *recorder) Emit(_ context.Context, ev loop.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *recorder) all() []loop.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]loop.Event(nil), r.events...)
}

// The answer streams a byte at a time; the observer sees it fill in, in
// both modes, and its last partial value is the answer.
func TestPartialValues(t *testing.T) {
	const answer = `{"category":"billing","priority":2,"tags":["plan","refund","ümlaut"]}`
	want := ticket{Category: "billing", Priority: 2, Tags: []string{"plan", "refund", "ümlaut"}}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			sp := script.New([]script.Step{answerStep(mode, answer)}, script.WithChunkSize(1))
			var prov provider.Provider = sp
			if mode == output.ModeResponseFormat {
				prov = formatProvider{sp, []string{provider.ResponseFormatJSONSchema}}
			}
			rec := &recorder{}
			step := loop.New(loop.WithObserver(output.Partials[ticket](rec)))
			got, err := output.Run[ticket](t.Context(), step, newThread(t), prov)
			if err != nil {
				t.Fatal(err)
			}
			if err := step.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			var partials []output.PartialEvent[ticket]
			var streamed strings.Builder
			for _, ev := range rec.all() {
				switch e := ev.(type) {
				case output.PartialEvent[ticket]:
					partials = append(partials, e)
				case loop.DeltaEvent:
					d, ok := e.Delta.(artifact.TextDelta)
					if !ok {
						t.Fatalf("delta %#v: the final answer streams as text", e.Delta)
					}
					streamed.WriteString(d.Content)
				}
			}
			if streamed.String() != answer {
				t.Fatalf("streamed %q, want %q", streamed.String(), answer)
			}
			if len(partials) < 10 {
				t.Fatalf("%d partial values, want one per growth", len(partials))
			}
			last := partials[len(partials)-1]
			if !reflect.DeepEqual(last.Value, want) || !reflect.DeepEqual(got, want) || last.JSON != answer {
				t.Fatalf("last partial %+v, answer %+v; want %+v", last, got, want)
			}
			for i, p := range partials {
				if !strings.HasPrefix(want.Category, p.Value.Category) || len(p.Value.Tags) > len(want.Tags) {
					t.Fatalf("partial %d %+v does not agree with the answer", i, p.Value)
				}
				if i > 0 && p.JSON == partials[i-1].JSON {
					t.Fatalf("partial %d repeats %q", i, p.JSON)
				}
			}
		})
	}
}

// Text that is not JSON gives no partial values, and every event still
// reaches the observer.
func TestPartialsIgnoreProse(t *testing.T) {
	rec := &recorder{}
	step := loop.New(loop.WithObserver(output.Partials[ticket](rec)))
	th := newThread(t)
	if _, err := step.Run(t.Context(), th, script.Play(script.Text("Hello {there}"))); err != nil {
		t.Fatal(err)
	}
	if err := step.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs := rec.all()
	for _, ev := range evs {
		if _, ok := ev.(output.PartialEvent[ticket]); ok {
			t.Fatalf("partial value from prose: %#v", ev)
		}
	}
	if _, ok := evs[len(evs)-1].(loop.TurnCompleteEvent); !ok || len(evs) < 2 {
		t.Fatalf("events %#v", evs)
	}
}
