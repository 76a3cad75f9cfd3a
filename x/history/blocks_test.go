package history_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/provider/script"
)

func textArt(s string) artifact.Artifact { return artifact.Text{Content: s} }

// sharesPrefix reports whether every turn of prev leads next: what a
// provider's prompt cache needs to reuse prev.
func sharesPrefix(prev, next []ledger.Turn) bool {
	return len(prev) <= len(next) && reflect.DeepEqual(prev, next[:len(prev)])
}

// blockRun plays turns question-and-answer turns through a loop with pol
// and returns the requests the provider received and the ledger length
// each was built from.
func blockRun(t *testing.T, pol *history.Policy, turns int) ([]provider.Request, []int) {
	t.Helper()
	steps := make([]script.Step, turns)
	for i := range steps {
		steps[i] = script.Text(fmt.Sprintf("answer %04d: %s", i, strings.Repeat("a", 60)))
	}
	prov := script.New(steps)
	th := ledger.NewThread()
	_ = th.Append(ledger.RoleSystem, textArt("You answer questions."))
	step := loop.New()
	var lens []int
	for i := range turns {
		_ = th.Append(ledger.RoleUser, textArt(fmt.Sprintf("question %04d: %s", i, strings.Repeat("q", 60))))
		lens = append(lens, len(th.Turns()))
		if _, err := step.Turn(context.Background(), th, prov, pol); err != nil {
			t.Fatal(err)
		}
	}
	return prov.Requests(), lens
}

func TestBlocksChangePrefixEveryKTurns(t *testing.T) {
	const budget, k, turns = 600, 10, 300
	for _, c := range []struct {
		name   string
		blocks int
	}{{"sliding", 0}, {"blocks", k}} {
		t.Run(c.name, func(t *testing.T) {
			pol, err := history.New(history.WithBudget(budget), history.WithBlocks(c.blocks))
			if err != nil {
				t.Fatal(err)
			}
			reqs, lens := blockRun(t, pol, turns)
			changes, crossings, over := 0, 0, false
			for r := 1; r < len(reqs); r++ {
				if got := history.Estimate(reqs[r].Turns); got > budget {
					t.Fatalf("request %d: %d tokens, over the budget of %d", r, got, budget)
				}
				// The first request that leaves turns out changes the
				// prefix wherever it falls; blocks are counted after it.
				wasOver := over
				if len(reqs[r].Turns) < lens[r] {
					over = true
				}
				if !wasOver {
					continue
				}
				changed := !sharesPrefix(reqs[r-1].Turns, reqs[r].Turns)
				if changed {
					changes++
				}
				crossed := lens[r]/k != lens[r-1]/k
				if crossed {
					crossings++
				}
				if c.blocks > 0 && changed && !crossed {
					t.Fatalf("request %d (ledger %d turns) changed its prefix inside a block", r, lens[r])
				}
			}
			if !over {
				t.Fatal("the thread never outgrew the budget")
			}
			// Each request adds two ledger turns, so a block of 10 spans
			// 5 requests: the block window changes its prefix once per
			// edge crossed, the sliding window on every request.
			switch c.blocks {
			case 0:
				if changes < turns-turns/4 {
					t.Fatalf("sliding: %d prefix changes in %d requests, want one nearly every request", changes, turns)
				}
			default:
				if changes != crossings {
					t.Fatalf("blocks: %d prefix changes, want %d (one per block edge)", changes, crossings)
				}
			}
			t.Logf("%s: %d prefix changes over %d requests", c.name, changes, turns)
		})
	}
}

// TestBlocksWithToolResults grows a thread of tool calls one ledger turn
// at a time: shortened old results move with the block, not every turn.
func TestBlocksWithToolResults(t *testing.T) {
	const budget, k = 3000, 12
	pol, err := history.New(history.WithBudget(budget), history.WithBlocks(k), history.WithKeep(3), history.WithResultBytes(40))
	if err != nil {
		t.Fatal(err)
	}
	turns := foxThread(1200)
	var prev []ledger.Turn
	changes, crossings, over := 0, 0, false
	for n := 3; n <= len(turns); n++ {
		v := pol.View(turns[:n])
		if got := history.Estimate(v); got > budget {
			t.Fatalf("%d turns: a view of %d tokens, over %d", n, got, budget)
		}
		wasOver := over
		if len(v) < n {
			over = true
		}
		if wasOver {
			changed := !sharesPrefix(prev, v)
			crossed := n/k != (n-1)/k
			if changed {
				changes++
			}
			if crossed {
				crossings++
			}
			if changed && !crossed {
				t.Fatalf("%d turns: the prefix changed inside a block", n)
			}
		}
		prev = v
	}
	if crossings == 0 || changes != crossings {
		t.Fatalf("%d prefix changes, want %d (one per block edge)", changes, crossings)
	}
}

// TestBlocksFallBack has one turn far larger than a block's room: the
// request still fits the budget, by the sliding window.
func TestBlocksFallBack(t *testing.T) {
	const budget = 400
	pol, err := history.New(history.WithBudget(budget), history.WithBlocks(8))
	if err != nil {
		t.Fatal(err)
	}
	var turns []ledger.Turn
	turns = append(turns, text(ledger.RoleSystem, "sys"), text(ledger.RoleUser, "first"))
	for i := range 40 {
		turns = append(turns, text(ledger.RoleAssistant, fmt.Sprintf("a%02d %s", i, strings.Repeat("x", 40))))
	}
	turns = append(turns, text(ledger.RoleUser, strings.Repeat("big ", 300)))
	v := pol.View(turns)
	if got := history.Estimate(v); got > budget {
		t.Fatalf("a view of %d tokens, over %d", got, budget)
	}
	sliding, err := history.New(history.WithBudget(budget))
	if err != nil {
		t.Fatal(err)
	}
	if want := sliding.View(turns); !reflect.DeepEqual(v, want) {
		t.Fatalf("the block window sent %d turns, not the sliding window's %d", len(v), len(want))
	}
}

func TestBlocksNegative(t *testing.T) {
	_, err := history.New(history.WithBudget(100), history.WithBlocks(-1))
	want := "history: invalid option: blocks -1 is negative: give a number of turns, or 0 to slide the window turn by turn"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestBlocksWithCompaction: with a summarizer, a block window stays in its
// budget and changes its prefix only at block edges and compactions.
func TestBlocksWithCompaction(t *testing.T) {
	const budget, k, turns = 800, 10, 200
	sum := &recorder{answer: func(i int) (string, error) { return fmt.Sprintf("summary %d: questions were asked.", i), nil }}
	pol, err := history.New(history.WithBudget(budget), history.WithBlocks(k), history.WithSummarizer(sum))
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := blockRun(t, pol, turns)
	changes := 0
	for r := 1; r < len(reqs); r++ {
		if got := history.Estimate(reqs[r].Turns); got > budget {
			t.Fatalf("request %d: %d tokens, over the budget of %d", r, got, budget)
		}
		if !sharesPrefix(reqs[r-1].Turns, reqs[r].Turns) {
			changes++
		}
	}
	// Two ledger turns a request (and a summary now and then): at most one
	// edge crossed per request of five, plus one change per compaction.
	if limit := turns*2/k + 1 + len(sum.sizes); changes > limit || len(sum.sizes) == 0 {
		t.Fatalf("%d prefix changes with %d summarizer requests, want at most %d", changes, len(sum.sizes), limit)
	}
	t.Logf("%d prefix changes, %d summarizer requests over %d requests", changes, len(sum.sizes), turns)
}
