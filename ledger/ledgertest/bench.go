package ledgertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// Bench runs the store benchmarks as sub-benchmarks of b: Append and
// LeaseRenew on a thread of 10 and of 10,000 turns, Load of 10,000
// turns, Fork of 10,000, and Load of a fork of them down a chain.
// newStorage is called as Run calls it, once per sub-benchmark.
func Bench(b *testing.B, newStorage func(t testing.TB) Opener) {
	open := func(b *testing.B) ledger.Store { return newStorage(b)(b) }
	for _, size := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("Append/turns=%d", size), func(b *testing.B) { BenchAppend(b, open(b), size) })
	}
	b.Run("Load/turns=10000", func(b *testing.B) { BenchLoad(b, open(b), 10_000) })
	for _, size := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("LeaseRenew/turns=%d", size), func(b *testing.B) { BenchLease(b, open(b), size) })
	}
	b.Run("Fork/turns=10000", func(b *testing.B) { BenchFork(b, open(b), 10_000) })
	for _, depth := range []int{1, 10} {
		b.Run(fmt.Sprintf("ForkLoad/turns=10000/chain=%d", depth), func(b *testing.B) { BenchForkLoad(b, open(b), 10_000, depth) })
	}
}

// benchTurn is a typical assistant turn: a paragraph and its usage.
func benchTurn(i int) []artifact.Artifact {
	return []artifact.Artifact{
		artifact.Text{Content: fmt.Sprintf("Answer %d: the quick brown fox jumps over the lazy dog, and the lazy dog lets it; the ledger keeps every word of it, turn after turn, in order.", i)},
		artifact.Usage{InputTokens: 1200, OutputTokens: 80},
	}
}

func seedTurns(n int) []ledger.Turn {
	turns := make([]ledger.Turn, n)
	for i := range turns {
		role := ledger.RoleUser
		if i%2 == 1 {
			role = ledger.RoleAssistant
		}
		turns[i] = ledger.Turn{Role: role, Artifacts: benchTurn(i)}
	}
	return turns
}

// BenchAppend measures one Append on a thread that holds size turns. For
// small sizes the thread is replaced every size appends (outside the timer)
// so that it stays small; a large thread only grows. A batching store
// should batch fewer than size turns, or its fsyncs fall outside the timer.
func BenchAppend(b *testing.B, s ledger.Store, size int) {
	ctx := context.Background()
	seed := seedTurns(size)
	fresh := func() *ledger.StoredThread {
		st, err := s.Create(ctx, ledger.WithTurns(seed...))
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	st := fresh()
	arts := benchTurn(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if size < 1000 && i > 0 && i%size == 0 {
			b.StopTimer()
			st.Close()
			st = fresh()
			b.StartTimer()
		}
		if err := st.Append(ledger.RoleAssistant, arts...); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st.Close()
}

// BenchLoad measures loading a thread of size turns.
func BenchLoad(b *testing.B, s ledger.Store, size int) {
	ctx := context.Background()
	st, err := s.Create(ctx, ledger.WithTurns(seedTurns(size)...))
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := s.Load(ctx, st.ID())
		if err != nil {
			b.Fatal(err)
		}
		if got.Len() != size {
			b.Fatalf("loaded %d turns", got.Len())
		}
		got.Close()
	}
}

// BenchLease measures one lease renewal, the record a working loop writes
// every ttl/3, on a thread that holds size turns.
func BenchLease(b *testing.B, s ledger.Store, size int) {
	ctx := context.Background()
	st, err := s.Create(ctx, ledger.WithTurns(seedTurns(size)...))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := st.AcquireLease(ctx, "bench", now, time.Minute); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := st.RenewLease(ctx, "bench", now.Add(time.Duration(i)*time.Second), time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}
