// Package loop runs the agent loop: a Step takes one turn — resolve the
// invoke options with (ctx, State), stream the provider's answer, append the
// assistant turn, hand each artifact to every handler, append what the
// handlers emit — and Run repeats turns until the model answers without tool
// calls or a limit (turns, tokens, time) stops it with a *LimitError.
//
// Handlers run concurrently across the artifacts of one answer (bounded by
// WithConcurrency); what they emit is appended in the order of the artifacts
// they answered, so results land in call order whatever order they finish in.
//
// Observers (WithObserver) see every event — stream deltas as they arrive,
// completed turns, errors — in order, each on its own goroutine with an
// unbounded queue, so a slow observer never stalls inference. Flush waits
// for them to catch up.
//
// Before each invocation, a tool call that has no result in the ledger (a
// crash, a cancelled run) is given an error result, so the model never sees
// an unanswered call. The open calls come from the State when it keeps
// them (ledger.CallTracker, as Thread and StoredThread do), so the loop's
// own cost per turn does not grow with the thread; any other State is
// read in full each turn.
//
// Failures are typed: *OptionError, *ProviderError, *HandlerError,
// *LedgerError and *LimitError, each wrapping its cause. Every turn
// completed before a failure stays in the ledger. An invoke option (and so
// a ToolFilter), provider, handler or ledger.State that panics fails the
// turn with its typed error, carrying the panic value and stack, which are
// also logged; an observer that panics loses that event. One that breaks its contract
// (yields after being told to stop, emits after returning) is ignored. None
// of them takes the caller down.
package loop
