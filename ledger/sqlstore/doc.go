// Package sqlstore is a ledger.Store over database/sql that runs on SQLite
// and on PostgreSQL. It compiles no driver: the subpackages sqlite (pure Go,
// modernc.org/sqlite) and postgres (pgx) open a database and hand it here,
// or pass any *sql.DB to Open with its Dialect.
//
// Open creates or migrates three tables, lode_threads, lode_turns and
// lode_metadata, recording the schema version in lode_schema. Every change
// is one transaction: a compare-and-swap on the thread's version column,
// then the turn row (unique on thread and sequence number) or the metadata
// row. Writers in different processes are therefore ordered, never
// interleaved or lost; a State that was overtaken fails with
// ledger.ErrConflict and can Reload. A thread's lease
// (ledger.StoredThread.AcquireLease) is one metadata row, updated in place
// by each renewal, so it does not grow however long a run works.
//
// Records that threads commit at about the same time share a transaction
// (group commit): one writer at a time commits whatever records are
// queued, up to 128, and each Commit returns once the transaction holding
// its record has committed, so a record is as durable, and a thread's
// records as ordered, as if each had a transaction of its own, while a
// thousand busy threads pay for a few flushes of the log, not a thousand.
// A record refused inside a batch (ErrConflict, ErrNotFound) fails alone;
// any other failure rolls the batch back and its records are retried one
// at a time, so one bad record fails only its own writer. Create joins
// the batches as well; Fork, Delete and AddCounter run alone.
//
// A fork (ledger.Fork, through Store.Fork) shares its parent's turn rows
// instead of copying them: its thread row names a base thread and how many
// of that thread's turns it reads, and it has rows only for the turns
// appended to it. Turn rows are never changed once written, so the parent
// grows apart from its forks; deleting a thread copies into each fork of
// it the rows that fork reads, in the delete's transaction.
//
// Rows changed behind the store's back are reported, never papered over:
// Load fails with ledger.ErrCorrupt when a thread's turn rows are not
// exactly the ones it records (numbered from where its base's turns end,
// no gap, none extra), its base thread is missing, or a turn does not
// decode, and List yields such a thread (rows counted, turns
// not decoded) with its ID and an ErrCorrupt error, and goes on.
//
// A database that goes away fails the change with its error, and the State
// stays as it was. When the commit's outcome is unknown (the connection
// broke during COMMIT), the turn may have landed: the next change then
// fails with ErrConflict and Reload shows it.
package sqlstore
