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
	var turns []ledger.Turn
	turns = append(turns, text(ledger.RoleSystem, "You answer questions about foxes."))
	for i := 0; len(turns) < 2000; i++ {
		id := fmt.Sprint("c", i)
		turns = append(turns,
			text(ledger.RoleUser, fmt.Sprintf("question %d?", i)),
			ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.ToolCall{ID: id, Name: "lookup", Arguments: `{"q":"fox"}`}}},
			ledger.Turn{Role: ledger.RoleTool, Artifacts: []artifact.Artifact{artifact.ToolResult{ToolCallID: id, Name: "lookup", Content: strings.Repeat("fox facts; ", 60)}}},
			text(ledger.RoleAssistant, "Here is what I found."),
		)
	}
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
