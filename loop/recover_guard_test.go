package loop_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/capture"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// stopRead trips on the result of a "read" call.
type stopRead struct{}

func (stopRead) Name() string          { return "stop-read" }
func (stopRead) Checks(at string) bool { return at == artifact.AtResult }
func (stopRead) Check(_ context.Context, c loop.Check) error {
	if strings.Contains(c.Result.Content, "ran read") {
		return loop.Trip("stop-read", "read's result is not for the model")
	}
	return nil
}

// A call Recover runs again has its result judged by the result guards,
// as a turn's: a stopped result is replaced and never reaches the model
// or the observers' content, the trip is stored, and the run ends there.
// Without the guard the result is kept and the run goes on.
func TestRecoverGuardsTheResultsOfCallsRunAgain(t *testing.T) {
	for _, guarded := range []bool{true, false} {
		name := "unguarded"
		if guarded {
			name = "guarded"
		}
		t.Run(name, func(t *testing.T) {
			for store, open := range recoverStores(t) {
				t.Run(store, func(t *testing.T) {
					s := open(t)
					crashed(t, s, "g1", true, user("look"), answer(call("c1", "read")))
					var mu sync.Mutex
					var content []loop.ToolContentEvent
					obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
						if ev, ok := ev.(loop.ToolContentEvent); ok {
							mu.Lock()
							content = append(content, ev)
							mu.Unlock()
						}
					})
					opts := []loop.Option{loop.WithHandlers(&tools{}), loop.WithClock(at(recLate)),
						loop.WithCapture(capture.Config{On: true}), loop.WithObserver(obs)}
					if guarded {
						opts = append(opts, loop.WithGuards(stopRead{}))
					}
					step := loop.New(opts...)
					prov := script.Play(script.Text("seen"))
					recs, err := step.Recover(context.Background(), s, prov)
					if err != nil || len(recs) != 1 {
						t.Fatalf("recover = %+v, %v", recs, err)
					}
					if err := step.Flush(context.Background()); err != nil {
						t.Fatal(err)
					}
					st, err := open(t).Load(context.Background(), "g1")
					if err != nil {
						t.Fatal(err)
					}
					r, n := resultOf(st, "c1")
					mu.Lock()
					defer mu.Unlock()
					if len(content) != 1 {
						t.Fatalf("%d content events", len(content))
					}
					if !guarded {
						if recs[0].Err != nil || n != 1 || r.Content != "ran read" || len(prov.Requests()) != 1 {
							t.Fatalf("err %v, result %+v (%d), %d requests", recs[0].Err, r, n, len(prov.Requests()))
						}
						if content[0].Result != `"ran read"` || content[0].Withheld {
							t.Errorf("content %+v", content[0])
						}
						return
					}
					var te *loop.TripError
					if !errors.As(recs[0].Err, &te) || te.Guard != "stop-read" || te.At != artifact.AtResult {
						t.Fatalf("err = %v, want stop-read's trip at the result", recs[0].Err)
					}
					if n != 1 || !r.IsError || !strings.HasPrefix(r.Content, `stopped: guard "stop-read"`) {
						t.Fatalf("result %+v (%d)", r, n)
					}
					if len(prov.Requests()) != 0 {
						t.Fatal("the model was asked after the trip")
					}
					if _, ok := loop.StoppedBy(st.Turns()); !ok {
						t.Fatal("no trip stored")
					}
					if content[0].Result != "" || !content[0].Withheld || content[0].Arguments != `{}` {
						t.Errorf("content %+v", content[0])
					}
					// The thread answers with the stored trip until a new message.
					if _, err := step.Run(context.Background(), st, script.Play()); !errors.Is(err, loop.ErrTripped) {
						t.Errorf("run after = %v", err)
					}
				})
			}
		})
	}
}
