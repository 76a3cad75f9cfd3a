package temporal_test

import (
	"context"
	"log/slog"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
	lt "github.com/lodeworks/lode/x/temporal"
)

// turnSteps is the script of n runs: each asks for one tool call, then
// answers.
func turnSteps(n int) *script.Provider {
	steps := make([]script.Step, 0, 2*n)
	for range n {
		steps = append(steps, script.Call("c1", "read", `{}`), script.Text("done"))
	}
	return script.Play(steps...)
}

// BenchmarkTurn is one model turn with one tool call, and the answer after
// it, on a file store: in process (loop.Step.Run), and as x/temporal's
// workflow on the dev server that scripts/temporal-dev.sh bench starts,
// with a worker in this process. The difference is what Temporal adds to
// such a turn: the server's round trips for the workflow and its four
// activities.
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	prompt := ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "read it"}}})
	b.Run("in-process", func(b *testing.B) {
		store, err := file.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		h := &tools{}
		step := loop.New(loop.WithHandlers(h))
		prov := turnSteps(b.N)
		b.ResetTimer()
		for range b.N {
			st, err := store.Create(ctx, prompt)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := step.Run(ctx, st, prov); err != nil {
				b.Fatal(err)
			}
			st.Close()
		}
	})
	b.Run("temporal", func(b *testing.B) {
		addr := realServer(b)
		store, err := file.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		a, err := lt.New(store, turnSteps(b.N), lt.WithHandler(&tools{}))
		if err != nil {
			b.Fatal(err)
		}
		c, err := client.Dial(client.Options{HostPort: addr, Logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler))})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		queue := "lode-bench-" + ledger.NewID()[:8]
		w := lt.NewWorker(c, queue, a, worker.Options{})
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		b.ResetTimer()
		for range b.N {
			st, err := store.Create(ctx, prompt)
			if err != nil {
				b.Fatal(err)
			}
			id := st.ID()
			st.Close()
			run, err := lt.Start(ctx, c, queue, lt.RunInput{Thread: id})
			if err != nil {
				b.Fatal(err)
			}
			var out lt.RunOutput
			if err := run.Get(ctx, &out); err != nil {
				b.Fatal(err)
			}
			if out.Answer != "done" {
				b.Fatalf("answer %q", out.Answer)
			}
		}
	})
}
