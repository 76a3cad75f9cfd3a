// Package storetest runs the loop on lode's stores: the checks of
// ledger/ledgertest that need a real loop (a run that persists each turn,
// the repair of an interrupted call, approvals paused in one process and
// resumed in another, resumers killed inside an approved call), with
// x/tool's handler and the script provider. ledgertest checks the records
// these runs append through the ledger API alone; this package checks that
// the loop appends them, and reads them back, as ledgertest expects. Its
// tests run it against ledger/file, SQLite and PostgreSQL.
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
