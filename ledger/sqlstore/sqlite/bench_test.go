package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/ledger/ledgertest"
)

func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("turns=%d", size), func(b *testing.B) {
			ledgertest.BenchAppend(b, open(b, filepath.Join(b.TempDir(), "ledger.db")), size)
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	ledgertest.BenchLoad(b, open(b, filepath.Join(b.TempDir(), "ledger.db")), 10_000)
}

func BenchmarkLeaseRenew(b *testing.B) {
	for _, size := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("turns=%d", size), func(b *testing.B) {
			ledgertest.BenchLease(b, open(b, filepath.Join(b.TempDir(), "ledger.db")), size)
		})
	}
}

func BenchmarkFork(b *testing.B) {
	ledgertest.BenchFork(b, open(b, filepath.Join(b.TempDir(), "ledger.db")), 10_000)
}

// BenchmarkForkLoad loads a fork of a 10,000-turn thread at the end of a
// chain of 1 and of 10 forks.
func BenchmarkForkLoad(b *testing.B) {
	for _, depth := range []int{1, 10} {
		b.Run(fmt.Sprintf("chain=%d", depth), func(b *testing.B) {
			ledgertest.BenchForkLoad(b, open(b, filepath.Join(b.TempDir(), "ledger.db")), 10_000, depth)
		})
	}
}
