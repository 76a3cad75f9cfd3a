// Package temporal runs lode's loop as a Temporal workflow, so that a run
// outlives any one process and any worker, on any machine, continues any
// run. It is a module of its own: lode's root module never requires the
// Temporal SDK.
//
// The workflow (Run, registered as WorkflowName) is deterministic: it
// decides only on activity results and signals. Each model turn is an
// activity (TurnName) that streams to the Step's observers inside it,
// heartbeats, and appends the answer to the thread in the ledger.Store;
// each tool call is an activity (CallName) that runs it through the
// handler and appends its result. The ledger stays the record — a thread
// reads the same however it ran — and Temporal's history keeps only what
// the workflow needs: the index of a turn, the IDs and names of its calls,
// the final text.
//
// Exactly once, as loop.Step.Recover does it: an activity that is retried
// first reads the thread, so a model turn that landed is not asked again
// and a call that has a result is not run again. An idempotent call
// (a loop.CallChecker handler says so, as x/tool's does from
// tool.Hints.Idempotent) is retried up to RunInput.CallAttempts times; any
// other is attempted once, and a call whose worker died inside it gets
// loop.InterruptedMessage (InterruptName). A call that waits for approval
// pauses the run; PendingQuery lists what waits and DecideSignal (Decide)
// decides one call. The call activity takes the thread's lease while the
// tool runs, every attempt at one activity as the same owner, so lode
// recover keeps off while a retry takes over at once. Between activities
// a thread has no lease: point lode recover (loop.Step.Recover) at the
// stores that loop runs use, not at one this workflow runs on, where
// Temporal already continues every run.
//
// An application builds one Agent (New: store, provider, handler) and a
// worker with NewWorker, and starts runs with Start on threads whose
// prompt it has appended.
//
// Not done here: a child agent as a child workflow (x/agent's child runs
// inside the call activity), per-tool timeouts and retry policies beyond
// idempotent or not (RunInput.CallTimeout bounds every call), and the
// per-turn tool filter at execution (the handler's policy gate still
// applies; the offered set of the turn is not known to the call activity).
package temporal
