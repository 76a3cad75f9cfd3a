// Package sqlite opens a ledger/sqlstore Store on an SQLite database file,
// with the pure-Go driver modernc.org/sqlite (no cgo).
//
// The database is opened in WAL mode with a busy timeout, so that several
// processes may share the file, and with synchronous=FULL: a turn is
// durable once Append returns, even if the machine loses power.
package sqlite
