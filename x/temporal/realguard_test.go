package temporal_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
)

// TestRealServerWorkerDiesAfterTheTrip runs a call whose result a guard
// stops on a worker of this process that dies the moment the tripwire is
// stored: its call activity never reports, and it stops polling (as a
// SIGKILLed worker: nothing more reaches the server). A second worker
// takes over when the activity's heartbeat times out: it retries the
// call (idempotent) or records its end (any other), finds the tripwire
// and ends the run with it, running nothing again and asking the model
// nothing more.
func TestRealServerWorkerDiesAfterTheTrip(t *testing.T) {
	addr := realServer(t)
	for _, name := range []string{"read", "rm"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, err := client.Dial(client.Options{HostPort: addr, Logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler))})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, id := thread(t, "read the secret")
			h := &tools{}
			prov := script.Play(script.Call("c1", name, `{"p":"secret"}`), script.Text("never"))
			g := loop.WithGuards(stopper("secret", artifact.AtResult))
			queue := "lode-dies-" + ledger.NewID()[:8]

			// The worker that dies: its call activity stores the
			// tripwire, then hangs until the test ends.
			a1, err := lt.New(s, prov, lt.WithHandler(h), lt.WithLoopOptions(g))
			if err != nil {
				t.Fatal(err)
			}
			stored, dead := make(chan struct{}), make(chan struct{})
			defer close(dead)
			w1 := lt.NewWorker(c, queue, a1, worker.Options{WorkerStopTimeout: time.Millisecond})
			w1.RegisterActivityWithOptions(func(ctx context.Context, in lt.CallInput) (lt.CallResult, error) {
				r, err := a1.Call(ctx, in)
				if err != nil || r.Tripped == nil {
					return r, err
				}
				close(stored)
				<-dead
				return r, errors.New("a dead worker's activity")
			}, activity.RegisterOptions{Name: lt.CallName, DisableAlreadyRegisteredCheck: true})
			if err := w1.Start(); err != nil {
				t.Fatal(err)
			}
			run, err := lt.Start(ctx, c, queue, lt.RunInput{Thread: id, HeartbeatTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-stored:
			case <-ctx.Done():
				t.Fatal("the tripwire was never stored")
			}
			// The worker that takes over, then the death of the first.
			a2, err := lt.New(s, prov, lt.WithHandler(h), lt.WithLoopOptions(g))
			if err != nil {
				t.Fatal(err)
			}
			w2 := lt.NewWorker(c, queue, a2, worker.Options{})
			if err := w2.Start(); err != nil {
				t.Fatal(err)
			}
			defer w2.Stop()
			w1.Stop()

			err = run.Get(ctx, nil)
			te, ok := lt.AsTrip(err)
			if !ok || te.Guard != "no-secret" || te.At != artifact.AtResult || te.ToolCallID != "c1" {
				t.Fatalf("run ended with %v", err)
			}
			turns, _ := turnsOf(t, s, id)
			if _, ok := loop.StoppedBy(turns); !ok {
				t.Fatalf("thread:%s", showTurns(turns))
			}
			if h.count("c1") != 1 || len(prov.Requests()) != 1 {
				t.Fatalf("the call ran %d times, the model was asked %d times; want once each", h.count("c1"), len(prov.Requests()))
			}
			for _, r := range results(t, s, id)["c1"] {
				if r.Content == loop.InterruptedMessage {
					t.Fatalf("the stopped call was recorded as interrupted: %+v", r)
				}
			}
			// The call's activity was taken over: retried, or ended by
			// lode.Interrupt, after its attempt timed out.
			took := false
			it := c.GetWorkflowHistory(ctx, lt.WorkflowID(id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == lt.InterruptName {
					took = true
				}
				if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && a.GetAttempt() > 1 {
					took = true
				}
			}
			if !took {
				t.Fatal("the history shows no attempt after the first worker died")
			}
		})
	}
}
