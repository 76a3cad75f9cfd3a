package file_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/ledger/ledgertest"
)

var benchPolicies = []struct {
	name   string
	policy file.SyncPolicy
}{
	{"sync=turn", file.SyncPolicy{}},
	// 8 < 10, so that the small thread pays its fsyncs inside the timer.
	{"sync=batch8", file.SyncPolicy{Count: 8, Interval: 50 * time.Millisecond}},
	{"sync=none", file.SyncPolicy{None: true}},
}

func BenchmarkAppend(b *testing.B) {
	for _, p := range benchPolicies {
		for _, size := range []int{10, 10_000} {
			b.Run(fmt.Sprintf("%s/turns=%d", p.name, size), func(b *testing.B) {
				s, err := file.Open(b.TempDir(), file.WithSync(p.policy))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				ledgertest.BenchAppend(b, s, size)
			})
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	s, err := file.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ledgertest.BenchLoad(b, s, 10_000)
}

func BenchmarkLeaseRenew(b *testing.B) {
	for _, p := range benchPolicies {
		for _, size := range []int{10, 10_000} {
			b.Run(fmt.Sprintf("%s/turns=%d", p.name, size), func(b *testing.B) {
				s, err := file.Open(b.TempDir(), file.WithSync(p.policy))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				ledgertest.BenchLease(b, s, size)
			})
		}
	}
}

// BenchmarkFork forks a 10,000-turn thread whole (the fsync of the new
// journal included).
func BenchmarkFork(b *testing.B) {
	s, err := file.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ledgertest.BenchFork(b, s, 10_000)
}

// BenchmarkForkLoad loads a fork of a 10,000-turn thread at the end of a
// chain of 1 and of 10 forks (each a copy, so one journal is read).
func BenchmarkForkLoad(b *testing.B) {
	for _, depth := range []int{1, 10} {
		b.Run(fmt.Sprintf("chain=%d", depth), func(b *testing.B) {
			s, err := file.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ledgertest.BenchForkLoad(b, s, 10_000, depth)
		})
	}
}
