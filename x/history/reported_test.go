package history

import (
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// The size of the request that produced an answer is its last Usage: the
// ones before it are attempts of the same request that failed or lost.
func TestReportedIsTheLastUsage(t *testing.T) {
	cases := []struct {
		arts []artifact.Artifact
		n    int
		ok   bool
	}{
		{nil, 0, false},
		{[]artifact.Artifact{artifact.Text{Content: "a"}}, 0, false},
		{[]artifact.Artifact{artifact.Text{Content: "a"}, artifact.Usage{InputTokens: 100, OutputTokens: 5}}, 105, true},
		{[]artifact.Artifact{
			artifact.Usage{InputTokens: 90}, artifact.Text{Content: "a"},
			artifact.Usage{InputTokens: 100, OutputTokens: 5}, artifact.Finish{Reason: "stop"},
		}, 105, true},
	}
	for i, tc := range cases {
		n, ok := reported(ledger.Turn{Role: ledger.RoleAssistant, Artifacts: tc.arts})
		if n != tc.n || ok != tc.ok {
			t.Errorf("case %d: reported = %d, %v; want %d, %v", i, n, ok, tc.n, tc.ok)
		}
	}
}
