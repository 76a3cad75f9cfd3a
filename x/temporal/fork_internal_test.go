package temporal

import "testing"

// ledger.Fork drops a parent's staged results by this prefix's value (the
// ledger imports nothing under x/), so it must not change unnoticed.
func TestStagedPrefixIsWhatForkDrops(t *testing.T) {
	if metaStaged != "lode.temporal.staged." {
		t.Fatalf("metaStaged is %q; change ledger/fork.go's stagedPrefix with it", metaStaged)
	}
}
