// Package ledger holds a conversation: Roles, Turns and State, the history
// of one thread plus its metadata (the caller's role, a tenant, anything a
// tool filter or handler needs to read).
//
// NewThread is the in-memory State. Appending a turn is O(1); readers may
// run concurrently with one another and with a writer. Turns returns a view
// that later appends never change, so a provider can read the history while
// handlers append results. Both keep the tool calls still waiting for a
// result as turns are appended (CallTracker), so finding them costs the
// same on a long thread as on a short one.
//
// A Store keeps threads durably (ledger/file: an append-only journal per
// thread; ledger/sqlstore: SQLite or PostgreSQL). Its Create and Load return
// a *StoredThread whose Append persists each turn before it returns, so a
// loop bound to it loses nothing that completed; a writer that fell behind
// another gets ErrConflict and can Reload.
package ledger
