// Package sqlite opens a ledger/sqlstore Store on an SQLite database file,
// with the pure-Go driver modernc.org/sqlite (no cgo).
//
// Open switches the file to WAL mode, so that readers and the writer do
// not block each other and several processes may share the file, and sets
// synchronous=FULL on every connection: a turn is durable once Append
// returns, even if the machine loses power.
//
// Every connection of the pool waits for a lock another connection or
// process holds for up to the busy timeout (DefaultBusyTimeout, 10s;
// WithBusyTimeout changes it) before failing with SQLITE_BUSY. Handles
// that open one file at the same moment, even a file that does not exist
// yet, all succeed: the schema is made once, under the write lock, and the
// one step SQLite refuses to wait on, two handles switching a new file to
// WAL together, is retried within the busy timeout.
package sqlite
