// Package storetest runs the loop on lode's stores: the checks of
// ledger/ledgertest that need a real loop (a run that persists each turn,
// the repair of an interrupted call, approvals paused in one process and
// resumed in another, resumers killed inside an approved call), with
// x/tool's handler and the script provider. ledgertest checks the records
// these runs append through the ledger API alone; this package checks that
// the loop appends them, and reads them back, as ledgertest expects. Its
// tests run it against ledger/file, SQLite and PostgreSQL.
//
// All of it is test code: the loop's handler and provider here are
// x/tool's and x/provider/script's, which sit above loop, and only a test
// may import them from below.
package storetest
