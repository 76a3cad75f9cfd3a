// Package file is the embedded ledger.Store: each thread is an append-only
// journal file, <id>.journal, in one directory.
//
// A journal is JSON lines, each prefixed with its length and CRC-32C, so a
// record torn by a crash or damaged on disk is told apart from a whole one.
// Appending a turn writes one record at the end of the file: it never
// rewrites or re-reads the journal, so its cost does not grow with the
// thread. Metadata changes are records too, and so is each lease a loop
// takes, renews and releases (ledger.StoredThread.AcquireLease): a run
// that works for an hour with the default lease adds about 360 short
// lines. They are not turns, so List's turn count leaves them out.
//
// A crash (kill -9) loses at most the turn being written: Load cuts a torn
// last record and reports it (WithRepairFunc). Damage before the end fails
// Load with a *CorruptError naming the line and byte offset, unless the
// store uses TruncateCorrupt. A journal without a usable thread header
// (garbled, empty, another thread's) fails Load under either policy. List
// reports a damaged journal with the same *CorruptError, in its place,
// and goes on with the others; it never shows one as an empty thread.
//
// A fork (ledger.Fork, through Store.Fork) is a copy: a new journal of the
// parent's turn records up to the cut, written whole and linked into place
// as Create's is. A journal never names another file, so deleting a parent
// leaves its forks as they are.
//
// WithSync chooses between an fsync per turn (the default) and batching;
// see SyncPolicy for the trade-off. Under the default, a record that finds
// another thread's flush under way waits for the next flush, which then
// covers every record written meanwhile with one flush of the file system
// (syncfs, on Linux): each Append still returns only once its record is on
// stable storage, and a lone writer's record syncs its own journal as
// before, but a thousand threads writing at once share a few flushes. A
// new journal (Create, Fork) shares them the same way, twice: once for
// its contents before it is linked into place, once for the directory
// that names it.
//
// Several stores, in one process or many, may share a directory: changes
// take the journal's file lock and fail with ledger.ErrConflict when the
// thread moved on since the State last saw it.
package file
