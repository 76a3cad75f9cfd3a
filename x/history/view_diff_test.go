package history

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// genThread makes a thread of about n turns with system turns, tool
// calls and results of many sizes, stored summaries (valid or not),
// server counts and empty turns, all drawn from r.
func genThread(r *rand.Rand, n int) []ledger.Turn {
	var ts []ledger.Turn
	add := func(role ledger.Role, arts ...artifact.Artifact) {
		ts = append(ts, ledger.Turn{Role: role, Artifacts: arts})
	}
	for range r.IntN(3) {
		add(ledger.RoleSystem, artifact.Text{Content: "rules " + strings.Repeat("r", r.IntN(80))})
	}
	if r.IntN(4) > 0 {
		add(ledger.RoleUser, artifact.Text{Content: "the first question"})
	}
	call := 0
	for len(ts) < n {
		switch k := r.IntN(20); {
		case k < 5:
			add(ledger.RoleUser, artifact.Text{Content: strings.Repeat("q", r.IntN(200))})
		case k < 8:
			arts := []artifact.Artifact{artifact.Text{Content: strings.Repeat("a", r.IntN(300))}}
			if r.IntN(2) == 0 {
				arts = append(arts, artifact.Usage{InputTokens: int64(r.IntN(3000)), OutputTokens: int64(r.IntN(200))})
			}
			add(ledger.RoleAssistant, arts...)
		case k < 14:
			calls := 1 + r.IntN(3)
			var arts []artifact.Artifact
			for c := range calls {
				arts = append(arts, artifact.ToolCall{ID: fmt.Sprint("c", call+c), Name: "look", Arguments: `{"q":1}`})
			}
			if r.IntN(3) == 0 {
				arts = append(arts, artifact.Usage{InputTokens: int64(r.IntN(5000))})
			}
			add(ledger.RoleAssistant, arts...)
			for c := range calls {
				body := strings.Repeat([]string{"x", "é", "日本"}[r.IntN(3)], r.IntN(900))
				res := artifact.ToolResult{ToolCallID: fmt.Sprint("c", call+c), Name: "look", Content: body, Full: body + "!"}
				if r.IntN(5) == 0 {
					res.Parts = []artifact.Artifact{artifact.Text{Content: "part"}}
				}
				if r.IntN(2) == 0 || c == 0 {
					add(ledger.RoleTool, res)
				} else {
					ts[len(ts)-1].Artifacts = append(ts[len(ts)-1].Artifacts, res)
				}
			}
			call += calls
		case k < 16:
			add(ledger.RoleTool, artifact.ToolResult{ToolCallID: "stray", Content: strings.Repeat("s", r.IntN(600))})
		case k < 17:
			add(ledger.Role(ledger.RoleAssistant))
		case k < 19:
			i := len(ts)
			first := r.IntN(i + 1)
			last := first + r.IntN(i-first+1)
			if r.IntN(6) == 0 {
				first, last = last+1, first // an invalid range
			}
			add(ledger.RoleSystem, artifact.Summary{Content: "summary " + strings.Repeat("s", r.IntN(400)), First: first, Last: last})
		default:
			add(ledger.RoleSystem, artifact.Text{Content: "a note"})
		}
	}
	return ts
}

// insertTurns returns a copy of led with turns added the way the loop and
// earlier options add them.
func insertTurns(r *rand.Rand, led []ledger.Turn) []ledger.Turn {
	var src []ledger.Turn
	if r.IntN(3) == 0 {
		src = append(src, ledger.Turn{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{artifact.Text{Content: "added system prompt"}}})
	}
	for _, t := range led {
		src = append(src, t)
		if r.IntN(15) == 0 {
			src = append(src, ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: "x", Content: strings.Repeat("i", r.IntN(500))}}})
		}
	}
	return src
}

// TestViewMatchesOracle holds the backwards view to the whole-thread one
// over many generated threads, budgets and options, through View's path
// and through ApplyInvoke's (added turns, a given summary).
func TestViewMatchesOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lengths := []int{0, 1, 2, 3, 5, 8, 13, 30, 60, 150, 400}
	budgets := []int{1, 10, 40, 100, 300, 800, 2000, 6000, 50000}
	for iter := range 3000 {
		led := genThread(r, lengths[r.IntN(len(lengths))])
		budget := budgets[r.IntN(len(budgets))]
		opts := []Option{WithBudget(budget), WithPinnedFirst(r.IntN(3) > 0), WithKeep(r.IntN(7)), WithResultBytes([]int{0, 1, 10, 100, 300}[r.IntN(5)])}
		p, err := New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		src := led
		switch r.IntN(4) {
		case 0:
			src = insertTurns(r, led)
		case 1:
			if len(led) > 0 {
				src = led[:r.IntN(len(led)+1)]
			}
		}
		var sum *artifact.Summary
		if r.IntN(4) == 0 && len(led) > 0 {
			first := r.IntN(len(led))
			sum = &artifact.Summary{Content: "given", First: first, Last: first + r.IntN(len(led)-first)}
		}
		oidx := mapIndexesOracle(src, led)
		idx := mapIndexes(src, led)
		for i := range src {
			if ledgerIndex(idx, i) != oidx[i] {
				t.Fatalf("iteration %d: ledger index of turn %d = %d, want %d", iter, i, ledgerIndex(idx, i), oidx[i])
			}
		}
		want, wantDropped := p.viewOracle(src, oidx, led, sum, budget)
		got, gotDropped := p.viewMapped(src, idx, led, sum, budget)
		if !reflect.DeepEqual(got, want) || gotDropped != wantDropped {
			t.Fatalf("iteration %d (%d turns, budget %d, keep %d, result bytes %d, pinned %v, summary %v):\ngot  %d turns, dropped %v: %s\nwant %d turns, dropped %v: %s",
				iter, len(src), budget, p.cfg.keep, p.cfg.resultBytes, !p.cfg.unpinFirst, sum,
				len(got), gotDropped, describe(got), len(want), wantDropped, describe(want))
		}
		if sum == nil {
			want, _ := p.viewOracle(led, identity(len(led)), led, nil, budget)
			if got := p.View(led); !reflect.DeepEqual(got, want) {
				t.Fatalf("iteration %d: View gives %s, want %s", iter, describe(got), describe(want))
			}
		}
	}
}

func identity(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func describe(ts []ledger.Turn) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%s(%d) ", t.Role, estimateTurn(t))
	}
	return b.String()
}
