// Package store opens the ledger a spec names, the one way every lode
// command (and any program that takes a store setting) turns
// --store or store: in lode.yaml into a ledger.Store:
//
//	DIR                           a folder: the file store (ledger/file)
//	sqlite:PATH                   a SQLite database file (ledger/sqlstore/sqlite)
//	postgres://USER@HOST/DB?...   a PostgreSQL database (ledger/sqlstore/postgres);
//	postgresql://… is the same
//
// The Store Open returns is also a ledger.Counter, so that counters (an
// x/policy usd_per_day limit) are kept where the threads are, and seen by
// every process that opens the same spec.
//
// # Choices this package makes
//
//   - A PostgreSQL password never goes in a spec: a URL that carries one
//     (user:password@, or a password= parameter) is refused, on the
//     command line too. A spec is printed back by lode (the lode resume
//     commands it prints, "threads in …"), kept in shell history and lode.yaml,
//     and a command line is readable by every local user (ps,
//     /proc/PID/cmdline). The password comes from where libpq and pgx look
//     for it: PGPASSWORD, or the password file (~/.pgpass, PGPASSFILE, or
//     passfile= in the URL). So every spec Open takes can be printed as is.
//   - Anything that is not sqlite: or a postgres URL is a folder, except a
//     spec of the form SCHEME://…, which is refused as an unknown kind
//     rather than taken for a folder named "mysql:".
//   - sqlite::memory: is refused: each connection of the pool would see a
//     database of its own. Leave the store out to keep a thread in memory.
//   - Open creates what is missing: the folder, the SQLite file, the
//     tables of an existing PostgreSQL database (not the database). Parse
//     and Spec.Path let a caller that must create nothing, such as a
//     listing, look first.
package store
