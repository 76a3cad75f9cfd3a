// Package loop runs the agent loop: a Step takes one turn — resolve the
// invoke options with (ctx, State), stream the provider's answer, append the
// assistant turn, hand each artifact to every handler, append what the
// handlers emit — and Run repeats turns until the model answers without tool
// calls or a limit (turns, tokens, cost, time) stops it with a *LimitError.
//
// With a Pricer (WithPricer; x/catalog's Catalog is one) each turn's
// artifact.Usage is stored with its model and cost; WithMaxCost bounds a
// run's dollars, its child runs' included, and refuses to start when a model
// it may use has no price (ErrUnpriced).
//
// # Admission: limits that see the whole request
//
// After every invoke option has been resolved — in whatever order they were
// given — and before the provider is called, a turn admits the request:
// WithMaxCost first, then each Admitter (WithAdmitters, or an invoke option
// that is one, such as x/policy's SpendLimit). They see the request exactly
// as it will be sent: the system prompt, the history as a history policy
// shortened it, every tool offered, MaxTokens. EstimateInput bounds its input
// tokens (two bytes a token for text, tool names, descriptions and JSON
// schemas, plus framing; WithEstimator replaces it) and a Quote prices it at
// the priciest model, the answer at the output price: MaxTokens, else the
// Pricer's maximum output for the model, else DefaultAnswerTokens. A limit
// that cannot pay for the input and MinAnswerTokens of answer refuses the
// request before it is sent (a *LimitError with NextUSD for WithMaxCost);
// otherwise it lowers MaxTokens to what it can pay for — setting it when
// it was unset and the Pricer knows no maximum output for the model, so
// the server never answers past what was counted (Quote.Cap) — and
// reserves that cost until the answer settles it — so child runs in
// parallel cannot pass the limit together either. The answer's usage is
// checked again after each turn. Step.Request admits nothing.
//
// WithMeter records tokens and
// dollars as OpenTelemetry metrics. A model call made for a turn outside
// the thread (x/history's summaries) counts with Charge: priced, toward
// the limit, on the meters, and to the observers as a UsageEvent.
//
// An answer the server paused (artifact.FinishPauseTurn, from Anthropic's
// server tools) is not a final one: Run sends the thread back as it stands
// for the server to carry the answer on, within the turn limit.
//
// Handlers run concurrently across the artifacts of one answer (bounded by
// WithConcurrency); what they emit is appended in the order of the artifacts
// they answered, so results land in call order whatever order they finish in.
//
// Observers (WithObserver) see every event — stream deltas as they arrive,
// completed turns, errors — in order, each on its own goroutine with its own
// bounded queue: DefaultObserverBuffer events and DefaultObserverBufferBytes
// of delta text, set with WithObserverBuffer and WithObserverBufferBytes
// (negative: no bound). A post to a full queue waits, so a slow observer
// slows the model's stream — back to the provider's read of its HTTP body —
// instead of growing memory, and no event is dropped. A faster observer
// still gets each event as soon as it is posted. Once the run's context is
// done a post no longer waits: a delta that does not fit is dropped, while
// turn-complete, error and pause events are queued past the bound, so they
// always arrive. An observer that panics loses that event and frees its
// room; one that calls Notify with the ctx it was given never waits on its
// own queue. Flush waits for them to catch up (an observer calling it with
// its ctx waits for the others, not for itself). Code a handler calls — a tool reporting progress —
// posts to the same observers with Notify(ctx, ev), using the ctx the
// handler was given; once the turn's handlers have returned, Notify posts
// nothing and reports false. A provider may do the same with the ctx of
// its Invoke while its stream runs (x/provider/fallback reports its
// attempts so); a Step without observers gives it a ctx where Notify
// reports false, at no cost.
//
// Before each invocation, a tool call that has no result in the ledger (a
// crash, a cancelled run) is given an error result, so the model never sees
// an unanswered call. The open calls come from the State when it keeps
// them (ledger.CallTracker, as Thread and StoredThread do), so the loop's
// own cost per turn does not grow with the thread; any other State is
// read in full each turn.
//
// No request has a message between a call and its result, an order every
// model API rejects. While calls of the last answer wait for approval, a
// run refuses to take a turn (a *PendingError names them), so a message a
// conduit adds meanwhile is not sent; once they are answered — or a crash
// left them without a result and the repair gives them one — each result
// is sent right after the turn that made its call and the message after
// them, in this request and every later one (ledger.LateResult). The
// ledger keeps the order things happened in.
//
// # Approvals that wait
//
// A handler may leave a tool call to a person: it emits an
// artifact.Pending in the tool turn instead of a result (x/tool's Handler
// does when its Approver returns xtool.ErrAwaitingApproval). Run then stops with a
// *PendingError (errors.Is ErrPaused) listing the calls, every turn
// stored; the pending calls live in the ledger and nowhere else, and the
// thread takes no more turns — Run and Turn return the *PendingError
// without asking the model, and no pending call is given an
// "interrupted" result. Pending lists them.
//
// Resume, in any process that opens the same store, records decisions
// (Approve, ApproveWith edited arguments — checked again by the handler's
// CheckCall before anything is recorded — or Deny with a reason the model
// reads) as one tool turn of artifact.Decision records, runs the approved
// calls, and goes on as Run does. Calls without a decision stay pending.
// The rule for exactly once:
//
//   - On a ledger.StoredThread, Run, Turn and Resume first take the
//     thread's lease (ledger.StoredThread.AcquireLease), before they read
//     anything, renew it every ttl/3 while they work (WithLease;
//     DefaultLeaseTTL) and release it when they return. Each call has its
//     own owner ID (host, pid, a random part; WithLeaseOwner adds a
//     prefix), so two resumers in one process are two owners. A Run, Turn
//     or Resume that meets another owner's live lease records nothing, runs
//     nothing and fails with a *LedgerError wrapping a *ledger.LeaseError
//     that names the holder and the expiry (errors.Is ledger.ErrLeased and
//     ledger.ErrConflict). So no one sees an approved call without a result
//     while its claimer lives.
//   - The decision turn is appended at the version the pending calls were
//     read at, just after the lease (ledger.StoredThread.AppendAt), before
//     any call runs: a resumer whose State fell behind the store fails with
//     an error matching ledger.ErrConflict and runs nothing. With leases
//     off (WithLease(-1)) this is the only guard. Give each resumer its own
//     loaded StoredThread; an in-memory Thread has neither guard.
//   - A call approved but without a result, once its claimer's lease has
//     expired (the process died while it ran), is never run again silently:
//     the next Resume gives it an error result, InterruptedMessage, saying
//     it may have partly taken effect. Only a call whose tool is idempotent
//     (tool.Hints.Idempotent, reported by a CallChecker handler) is claimed
//     again and run again. Run, instead of Resume, gives every such call
//     InterruptedMessage.
//   - A lease lost while the work goes on (a renewal finds another owner
//     took it over) cancels the work's context, with the *ledger.LeaseError
//     as its cause, and Run or Resume returns that error. A store that fails
//     to renew is tried again until the lease would expire.
//
// Taking over an expired lease adds a lode.lease.takeover event to the run
// or resume span (lode.lease.previous_owner, lode.lease.previous_acquired,
// lode.lease.expired_at); the span's lode.lease.owner names the new owner.
// WithClock sets the clock leases are dated with, for tests that let a
// dead owner's lease expire without waiting.
//
// # Recovering stopped runs
//
// A run whose process died leaves its lease unreleased. Step.Recover lists
// a ledger.Store (the lease is in each ThreadInfo's metadata, so an idle
// thread is not loaded), takes every expired lease with the store's
// compare-and-swap — of two recoverers exactly one continues a thread —
// and goes on by the rules above: a started call with no result gets
// InterruptedMessage (an idempotent one runs again, its result judged by the
// result guards as in a turn), a model answer that
// never landed is asked for again, pending calls stay pending unless
// WithApprovalExpiry lets them be denied with ApprovalExpiredReason. Each
// Recovery says from where (RecoverPoint), which turn and calls, and which
// owners; observers get a RecoveredEvent and a tracer a "lode.recover"
// span. lode recover and lode worker run it from the command line.
//
// PausedEvent and DecidedEvent tell observers when a run paused and who
// (Decision.By) decided what; with a tracer, the run span carries
// lode.paused and lode.pending_calls, and Resume's span "lode.resume" has
// one lode.decision event per decision.
//
// # Guards
//
// WithGuards adds checks at four checkpoints: the user's message before the
// model sees it, each call's arguments before any call of the answer runs,
// each result before the model reads it, and the answer before a person
// sees it (x/guard builds them). The first that trips stops the turn with a
// *TripError: the turn stores an artifact.Tripwire where it stopped, runs
// nothing further (calls not yet started get "not run" results, a pending
// one of the same answer too), keeps what was stopped out of the ledger
// and of every later request, and Run or Resume on the thread returns the
// stored trip until a new user message follows. With an output guard,
// observers get the answer's deltas up to WithOutputWindow bytes behind
// the model, each part only once the guards passed the text before it.
// A thread no guard ever stopped costs a turn one metadata lookup.
//
// # Content
//
// WithCapture (or capture.With on the run's context) records the
// conversation on the spans, in the OpenTelemetry GenAI conventions' form,
// and tells the observers the same: a ContentEvent for each answer, a
// ToolContentEvent for each tool call, scrubbed and bounded as the spans
// are. What a guard stopped is on neither.
//
// Failures are typed: *OptionError, *ProviderError, *HandlerError,
// *LedgerError, *LimitError, *PendingError, *DecisionError and *TripError, each wrapping its cause. Every turn
// completed before a failure stays in the ledger. An invoke option (and so
// a ToolFilter), provider, handler or ledger.State that panics fails the
// turn with its typed error, carrying the panic value and stack, which are
// also logged; an observer that panics loses that event. One that breaks its contract
// (yields after being told to stop, emits after returning) is ignored. None
// of them takes the caller down.
package loop
