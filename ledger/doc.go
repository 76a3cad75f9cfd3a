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
//
// # Flow labels
//
// AddLabel, HasLabel and Labels keep what a thread's context has taken in
// (LabelUntrusted, LabelPrivate), one metadata key per label under
// LabelKeyPrefix naming the tool that first brought it. A label is set
// only when absent and never removed, so what a model has read stays
// known for the rest of the thread; x/policy's flow rules read it.
//
// # Leases
//
// A StoredThread carries a lease: who works on it (an owner ID) and until
// when. AcquireLease takes it, RenewLease extends it, ReleaseLease ends it,
// and Lease reads it. The lease is one metadata record under LeaseKey,
// committed through the Journal at the version the State last saw, so every
// Store keeps it without knowing about it, and the store's compare-and-swap
// decides between owners racing for it: of two acquirers, exactly one
// wins. The rule:
//
//   - Only an expired lease is taken over. Another owner's live lease
//     refuses AcquireLease with a *LeaseError naming the holder and the
//     expiry; it matches ErrLeased and ErrConflict.
//   - The owner acquiring again refreshes its lease. A State that fell
//     behind the store gets ErrConflict and must Reload to see the holder.
//   - A renewal that finds the lease gone, or the stored thread changed
//     since the State read it (which, while the lease is held, means
//     another owner took it over after it expired), fails with a
//     *LeaseError with Lost set: the owner must stop.
//   - Each acquisition, renewal and release is one small journal record
//     (one row in SQL stores). It is metadata, not a turn: ThreadInfo.Turns
//     and the history do not count it, and it is listed in
//     ThreadInfo.Metadata. SetMetadata refuses LeaseKey.
//   - Expiry is judged with the clock the caller passes, so the owners'
//     clocks must agree to within a small part of the lease's duration.
//
// # Forks
//
// Fork makes a new thread of a stored thread's first turns, to ask again
// from a point of it without losing what followed (an edit, a regenerate,
// a counterfactual). The fork keeps those turns as they were and links
// back under ForkedFromKey and ForkedAtKey; it leaves behind the lease,
// tool-search activations and child-agent links of later turns. It cuts
// only where a turn may start (every kept call has its result), so it
// inherits no pending approval and runs no kept call again; any other cut
// is ErrForkPoint. Spend counters belong to the Counter, not the thread,
// and are never copied.
//
// Fork is a function over the Store contract rather than a Store method:
// it loads the parent and creates the fork with its kept turns, so every
// Store, lode's and a third party's, has it without a change, and a fork
// is as crash-safe as Create (no fork or a whole one). The price is a copy
// of the kept turns; BENCHMARKS.md gives it per store. A store that could
// share the parent's turns would add an optional interface that Fork
// finds by assertion; none does yet.
//
// The in-memory Thread has no versions and takes no lease. The loop's Run,
// Turn and Resume lease every stored thread they work on.
package ledger
