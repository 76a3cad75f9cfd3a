// Package ledgertest is the contract every ledger.Store meets, as a test
// suite any store runs, lode's own (ledger/file, ledger/sqlstore with
// SQLite and PostgreSQL) and yours, so that they all behave alike to the
// loop and to each other's users.
//
// A store's test calls Run with a function that returns an Opener over
// fresh storage; the Opener opens independent Store instances over that
// storage, as separate processes would:
//
//	func TestContract(t *testing.T) {
//		ledgertest.Run(t, func(t testing.TB) ledgertest.Opener {
//			db := newEmptyDatabase(t)
//			return func(t testing.TB) ledger.Store { return mystore.Open(db) }
//		})
//	}
//
// Run covers the Store methods and every StoredThread change: durability
// on return, round trips of every artifact kind, listing, deletion,
// conflicts between instances, closed stores and cancelled contexts, the
// records a loop run appends (calls, results, approval records, claims at
// a version), leases and forks (ledger.Fork: the kept turns, the link
// back, what is left behind, refused cuts, forks of forks; a reload of a
// fork is its parent's turns to the cut byte for byte, parent and fork
// grow apart, deleting a parent leaves its forks whole, forks cut while
// the parent is appended to or deleted; whether the store copies or, as a
// ledger.Forker, shares the turns). It uses the ledger API alone: it
// imports nothing of the loop, so a store written outside lode depends on
// nothing more than its own code and ledger.
//
// Stores that persist across processes add more, each one test function:
// RunDamaged (damage is reported, never hidden), Crash (kill -9 of a
// writer loses nothing that Append returned), LeaseCrash (a lease and
// the claim made under it survive the kill of their owner) and ForkCrash
// (a fork, or a delete of a fork that has forks, killed mid-way leaves
// no fork or a whole one, and the parent intact). Crash, LeaseCrash and ForkCrash re-run the test binary as a
// child, so the test that calls them must call them first thing. Bench,
// or BenchAppend, BenchLoad, BenchLease, BenchFork and BenchForkLoad one
// by one, measure a store.
//
// The pieces these tests are built from are exported for a store's own
// tests: StartChild, ChildConfig and RunChild run a child process that
// reports its progress line by line, Child.Kill SIGKILLs it, AfterLeases
// is a clock past the dead child's lease, so that taking over needs no
// waiting, Load, Create, Append, EqualTurns, SameJSON, Roles and Show read, write
// and compare threads, failing the test on error, and RunChecks runs a
// store's own named Checks the way Run runs the contract.
package ledgertest
