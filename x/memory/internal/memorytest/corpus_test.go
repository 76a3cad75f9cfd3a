package memorytest

import (
	"slices"
	"strings"
	"testing"
)

func TestCorpus(t *testing.T) {
	facts, qs := Corpus(1000, 50)
	facts2, qs2 := Corpus(1000, 50)
	if len(facts) != 1000 || len(qs) != 50 || !slices.Equal(facts, facts2) || !slices.Equal(qs, qs2) {
		t.Fatalf("Corpus is not deterministic or the wrong size: %d facts, %d questions", len(facts), len(qs))
	}
	if seen := map[string]bool{}; true {
		for _, f := range facts {
			if seen[f] {
				t.Fatalf("duplicate fact %q", f)
			}
			seen[f] = true
		}
	}
	for _, q := range qs {
		// The question names the person its fact is about.
		words := strings.Fields(facts[q.Answer])
		if !strings.Contains(q.Text, strings.TrimSuffix(words[0]+" "+words[1], "'s")) {
			t.Errorf("question %q does not name the person of %q", q.Text, facts[q.Answer])
		}
	}
	big, _ := Corpus(100_000, 0)
	if len(big) != 100_000 {
		t.Fatalf("Corpus(100000) gave %d facts", len(big))
	}
	// Each person is named once: ten facts, one of each attribute.
	people := map[string]int{}
	for _, f := range big {
		w := strings.Fields(f)
		people[strings.TrimSuffix(w[0]+" "+w[1], "'s")]++
	}
	if len(people) != 10_000 {
		t.Fatalf("%d distinct people, want 10,000", len(people))
	}
	for p, n := range people {
		if n != 10 {
			t.Fatalf("%s has %d facts, want 10", p, n)
		}
	}
}
