package storetest

import (
	"testing"

	"github.com/lodeworks/lode/ledger/ledgertest"
)

// Opener opens a new Store over one storage; see ledgertest.Opener.
type Opener = ledgertest.Opener

// Run runs the loop's run and repair checks. newStorage returns an Opener
// over fresh, empty storage; it is called once per subtest.
func Run(t *testing.T, newStorage func(t testing.TB) Opener) {
	ledgertest.RunChecks(t, newStorage,
		ledgertest.Check{Name: "LoopPersistsEachTurn", Fn: testLoop},
		ledgertest.Check{Name: "LoopRepairsAfterCrash", Fn: testLoopRepair})
}
