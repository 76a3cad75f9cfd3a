package postgres_test

import (
	"fmt"
	"testing"

	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger/ledgertest"
)

// The server runs with fsync on when benchmarks run (see pgtest.Shared).
func BenchmarkAppend(b *testing.B) {
	srv := pgtest.Shared(b)
	for _, size := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("turns=%d", size), func(b *testing.B) {
			ledgertest.BenchAppend(b, open(b, srv.NewDatabase(b)), size)
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	srv := pgtest.Shared(b)
	ledgertest.BenchLoad(b, open(b, srv.NewDatabase(b)), 10_000)
}

func BenchmarkLeaseRenew(b *testing.B) {
	srv := pgtest.Shared(b)
	for _, size := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("turns=%d", size), func(b *testing.B) {
			ledgertest.BenchLease(b, open(b, srv.NewDatabase(b)), size)
		})
	}
}

func BenchmarkFork(b *testing.B) {
	srv := pgtest.Shared(b)
	ledgertest.BenchFork(b, open(b, srv.NewDatabase(b)), 10_000)
}

// BenchmarkForkLoad loads a fork of a 10,000-turn thread at the end of a
// chain of 1 and of 10 forks.
func BenchmarkForkLoad(b *testing.B) {
	srv := pgtest.Shared(b)
	for _, depth := range []int{1, 10} {
		b.Run(fmt.Sprintf("chain=%d", depth), func(b *testing.B) {
			ledgertest.BenchForkLoad(b, open(b, srv.NewDatabase(b)), 10_000, depth)
		})
	}
}
