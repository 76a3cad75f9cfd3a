package loop_test

import (
	"context"
	"iter"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
)

// caller calls a tool on every turn but the turns-th of a run, which
// answers.
type caller struct {
	turns int
	n     *int
}

func (c caller) Invoke(context.Context, *provider.Request) iter.Seq2[artifact.Artifact, error] {
	return func(yield func(artifact.Artifact, error) bool) {
		*c.n++
		if *c.n%c.turns == 0 {
			yield(artifact.Text{Content: "All done: the numbers add up."}, nil)
			return
		}
		yield(artifact.ToolCall{ID: "c" + strconv.Itoa(*c.n), Name: "add", Arguments: `{"a":1,"b":2}`}, nil)
	}
}

// BenchmarkRunTurnsSQLite is a Run of four turns (three that call a tool,
// one that answers) on a SQLite thread, with the lease Run holds and
// without, taken in turn on two databases so that a shared machine's
// drift falls on both alike: it reports each as ns/turn, and the cost
// the lease adds as lease-%.
func BenchmarkRunTurnsSQLite(b *testing.B) {
	const turns = 4
	type side struct {
		st   *ledger.StoredThread
		step *loop.Step
		prov caller
		took time.Duration
	}
	ctx := context.Background()
	tool := loop.HandlerFunc(func(ctx context.Context, a artifact.Artifact, e loop.Emitter) error {
		if c, ok := a.(artifact.ToolCall); ok {
			e.Emit(ctx, loop.TurnCompleteEvent{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "3"}}})
		}
		return nil
	})
	open := func(ttl time.Duration) *side {
		s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "ledger.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		st, err := s.Create(ctx, ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "Add them up."}}}))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return &side{st: st, step: loop.New(loop.WithLease(ttl), loop.WithHandlers(tool)), prov: caller{turns: turns, n: new(int)}}
	}
	on, off := open(0), open(-1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sides := []*side{on, off}
		if i%2 == 1 {
			sides[0], sides[1] = off, on
		}
		for _, sd := range sides {
			start := time.Now()
			if _, err := sd.step.Run(ctx, sd.st, sd.prov); err != nil {
				b.Fatal(err)
			}
			sd.took += time.Since(start)
		}
	}
	n := float64(b.N * turns)
	b.ReportMetric(float64(on.took.Nanoseconds())/n, "lease-on-ns/turn")
	b.ReportMetric(float64(off.took.Nanoseconds())/n, "lease-off-ns/turn")
	b.ReportMetric(100*(float64(on.took)/float64(off.took)-1), "lease-%")
}
