package loop_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// BenchmarkRecoverScan is one Recover pass over a store of n idle
// threads (finished runs, leases released, ten turns each): the cost a
// lode worker pays per poll when nothing needs recovering.
func BenchmarkRecoverScan(b *testing.B) {
	for _, kind := range []string{"file", "sqlite"} {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/threads=%d", kind, n), func(b *testing.B) {
				ctx := context.Background()
				var s ledger.Store
				var err error
				if kind == "file" {
					s, err = file.Open(b.TempDir())
				} else {
					s, err = sqlite.Open(ctx, filepath.Join(b.TempDir(), "lode.db"))
				}
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				var turns []ledger.Turn
				for i := range 5 {
					turns = append(turns,
						ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: fmt.Sprintf("question %d", i)}}},
						ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "an answer of a few words"}}})
				}
				for i := range n {
					st, err := s.Create(ctx, ledger.WithID(fmt.Sprintf("idle-%05d", i)), ledger.WithTurns(turns...))
					if err != nil {
						b.Fatal(err)
					}
					st.Close()
				}
				step := loop.New()
				prov := script.Play()
				b.ResetTimer()
				for b.Loop() {
					recs, err := step.Recover(ctx, s, prov)
					if err != nil || len(recs) != 0 {
						b.Fatalf("%v %v", recs, err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/thread")
			})
		}
	}
}
