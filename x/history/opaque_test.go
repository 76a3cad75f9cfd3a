package history_test

import (
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/history"
)

// Blocks an adapter keeps to send back whole (Claude's search results)
// count as the bytes they hold.
func TestEstimateCountsOpaque(t *testing.T) {
	plain := ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "ok"}}}
	withResults := ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "ok"},
		artifact.Opaque{Provider: "anthropic", Type: "web_search_tool_result", Data: strings.Repeat("x", 4000)}}}
	if got, want := history.Estimate([]ledger.Turn{withResults})-history.Estimate([]ledger.Turn{plain}), 1000; got != want {
		t.Fatalf("the results add %d tokens, want %d", got, want)
	}
}
