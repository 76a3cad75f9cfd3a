package main

import (
	"context"
	"fmt"
	"testing"
)

// TestScenarioAnswers runs the scenario once through each side, with and
// without prior turns: each calls the tool with the same arguments and
// quotes its result in the final answer, so that the sides do the same
// work.
func TestScenarioAnswers(t *testing.T) {
	for side, mk := range frameworks {
		for _, prior := range []int{0, 1000} {
			run, err := mk(prior, t.TempDir())
			if err != nil {
				t.Fatalf("%s: %v", side, err)
			}
			for i := range 3 { // a rewound session gives the same answer again
				got, err := run(context.Background())
				if err != nil {
					t.Fatalf("%s, %d prior turns, run %d: %v", side, prior, i, err)
				}
				if got != wantAnswer {
					t.Fatalf("%s, %d prior turns, run %d: answered %q, want %q", side, prior, i, got, wantAnswer)
				}
			}
		}
	}
}

// TestMeasure checks that a measurement counts runs and allocations.
func TestMeasure(t *testing.T) {
	m, err := measure("lode", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs < 10 || m.NsOp <= 0 || m.Allocs <= 0 {
		t.Fatalf("measurement %+v", m)
	}
	if _, err := measure("nope", 0, 0); err == nil || err.Error() != `no side "nope"` {
		t.Fatalf("unknown side: %v", err)
	}
}

// BenchmarkScenario runs each side in this one process, for profiling; the
// figures of record come from -compare, a process per side.
func BenchmarkScenario(b *testing.B) {
	for _, side := range []string{"thread", "thread-inline", "file", "lode", "lode-inline", "eino"} {
		for _, prior := range []int{0, 1000} {
			b.Run(fmt.Sprintf("%s/prior=%d", side, prior), func(b *testing.B) {
				run, err := frameworks[side](prior, b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if got, err := run(ctx); err != nil || got != wantAnswer {
						b.Fatal(got, err)
					}
				}
			})
		}
	}
}
