package history_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/history"
)

// BenchmarkRequestSize builds the request of a 2,000-turn thread with and
// without a policy, reporting the request's estimated tokens.
func BenchmarkRequestSize(b *testing.B) {
	turns := foxThread(2000)
	pol, err := history.New(history.WithBudget(8000))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		view func([]ledger.Turn) []ledger.Turn
	}{
		{"none", func(t []ledger.Turn) []ledger.Turn { return t }},
		{"budget=8000", pol.View},
	} {
		b.Run(c.name, func(b *testing.B) {
			var v []ledger.Turn
			b.ReportAllocs()
			for b.Loop() {
				v = c.view(turns)
			}
			b.ReportMetric(float64(history.Estimate(v)), "tokens/request")
			b.ReportMetric(float64(len(v)), "turns/request")
		})
	}
}

// BenchmarkView builds the view of a long thread, without and with a
// stored summary, at two lengths: the cost should follow the budget, not
// the thread.
func BenchmarkView(b *testing.B) {
	pol, err := history.New(history.WithBudget(8000))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{2000, 20000} {
		plain := foxThread(n)
		summarised := append(foxThread(n-40), ledger.Turn{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{
			artifact.Summary{Content: strings.Repeat("what happened; ", 100), First: 2, Last: n - 42}}})
		summarised = append(summarised, foxThread(40)[1:]...)
		for _, c := range []struct {
			name  string
			turns []ledger.Turn
		}{{"plain", plain}, {"summarised", summarised}} {
			b.Run(fmt.Sprintf("%s/turns=%d", c.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					pol.View(c.turns)
				}
			})
		}
	}
}

// foxThread is a system turn and then questions answered with a tool
// call, at least n turns in all.
func foxThread(n int) []ledger.Turn {
	var turns []ledger.Turn
	turns = append(turns, text(ledger.RoleSystem, "You answer questions about foxes."))
	for i := 0; len(turns) < n; i++ {
		id := fmt.Sprint("c", i)
		turns = append(turns,
			text(ledger.RoleUser, fmt.Sprintf("question %d?", i)),
			ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: id, Name: "lookup", Arguments: `{"q":"fox"}`}}},
			ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: id, Name: "lookup", Content: strings.Repeat("fox facts; ", 60)}}},
			text(ledger.RoleAssistant, "Here is what I found."),
		)
	}
	return turns
}

// BenchmarkCompactLongThread turns compaction on for a 10,000-turn thread
// and runs one turn: the old turns go to the summarizer in chunks. It
// reports the summarizer requests, the largest one's tokens and the window
// each must fit.
func BenchmarkCompactLongThread(b *testing.B) {
	const n, budget = 10000, 4000
	var requests, largest int
	b.ReportAllocs()
	for b.Loop() {
		sum, _, _ := compactLongThread(b, n, budget)
		requests, largest = len(sum.sizes), sum.largest()
	}
	if largest > budget {
		b.Fatalf("a summarizer request of %d tokens, over the window of %d", largest, budget)
	}
	b.ReportMetric(float64(requests), "summarizer-requests")
	b.ReportMetric(float64(largest), "largest-request-tokens")
	b.ReportMetric(budget, "window-tokens")
}
