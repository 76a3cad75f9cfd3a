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
// and a call that has a result is not run again. A call whose worker died
// inside it, or whose attempts ran out, gets loop.InterruptedMessage
// (InterruptName). A call that waits for approval pauses the run;
// PendingQuery lists what waits and DecideSignal (Decide) decides one
// call.
//
// # Timeouts and retries
//
// Each attempt at a call is bounded by its tool's timeout: a CallTimer
// handler (x/tool's, from tool.Tool.Timeout or its own default) says it,
// and CallGrace is added so that the handler's own timeout result is what
// the model reads; RunInput.CallTimeout is the bound of calls whose
// handler says none. An idempotent call (a loop.CallChecker handler says
// so, as x/tool's does from tool.Hints.Idempotent) is retried, up to
// RunInput.CallAttempts times or by the retry policy WithCallPolicy sets
// for its tool (which may also set its timeout); any other call is
// attempted once, whatever its policy says.
//
// # Parallel calls
//
// The calls of one answer run as parallel activities (one by one when a
// child agent's call is among them). Each keeps its result aside, in the
// thread's metadata, and CommitName then appends them all as one tool
// turn, in the calls' order, exactly as a loop turn does, whatever order
// they finished in: a thread stored through Temporal is turn for turn
// what the same run stores in process. The commit is one append at the
// version the thread was read at, so a commit run again appends nothing
// twice (the store's compare-and-swap decides). The workflow schedules
// parallel calls together and reads them in order, so a replay gives the
// same commands; histories written before one-by-one calls were
// committed together replay as they were written (ChangeOneToolTurn).
//
// # Workers that die
//
// Any worker may die at any moment; the run goes on elsewhere, within
// seconds. Every activity heartbeats every fifth of its heartbeat timeout
// (RunInput.HeartbeatTimeout, DefaultHeartbeatTimeout) and is retried
// after RetryInterval, so a dead worker costs about the timeout; NewWorker
// lets the SDK send each heartbeat (MaxHeartbeatThrottleInterval) and
// hands a dead worker's next workflow task to another after
// StickyTimeout. A retried activity takes over the thread's lease at
// once: its owner names the workflow run and the step (the model turn
// after turn N, the calls of turn N), not the process, and a live lease
// of the same run can only be one a dead attempt left (the run takes one
// step at a time). Another run's lease, or a loop run's, is still met,
// and only an expired one is taken over.
//
// A call that needs a person's approval is always asked. Its Pending
// record is written by the call's activity; a worker that dies after the
// answer landed and before the record was written leaves a call with no
// record and no decision, which the recovery (InterruptName, or
// CommitName for calls run together) asks the approval rules about (the
// x/tool Handler's, and every caller's above a child: Handler.GateBelow)
// before anything else: a call they send to a person never ran, since it
// runs only under a recorded decision, and gets its Pending record and
// waits. Only a call that may have run gets loop.InterruptedMessage.

// # The turn's tools at execution
//
// Before the model is asked, the turn activity keeps the names of the
// tools the turn offers under MetaOffered (written only when the set
// changed). The call activities run each call with that set
// (xtool.WithOffered), so x/tool's Handler refuses a call to a tool the
// turn did not offer in the very words a loop turn uses. Temporal's
// history carries no tool list. Only x/tool's Handler reads the set; a
// thread without the record (taken before) restricts nothing.
//
// # Child agents
//
// WithChildAgents names x/agent Agents (registered in the parent's
// registry with agent.Register): a call to one runs as a child workflow.
// The Child activity checks the call as the caller's x/tool Handler checks
// any (the tools its turn offered, its Gate: x/policy's rules and limits,
// xtool.Handler.Admit), gates it by the caller's approval rules, checks
// its arguments (agent.Agent.Task), and creates the child thread
// (ChildThreadID, with x/agent's metadata: agent, depth, parent thread
// and call, and the tools denied to it: those of the parent's registry
// its turn did not offer; and the caller's identity, x/auth's user,
// tenant and roles keys, so that x/policy's roles and tenant limits bind
// in the child as in its caller); the child workflow runs the child's loop, each
// of its turns and calls an activity of the child's provider, tools and
// filter; ChildEndName words its end as x/agent does (agent.Agent.Answer)
// and appends it as the call's result. Approvals are inherited: each call
// the child makes is asked of every caller's x/tool Handler above it
// (xtool.Handler.GateBelow), nearest first, and one that needs a person
// waits in the child; the child tells its parent (ChildPendingSignal), so
// the parent's PendingQuery lists it, and a DecideSignal sent to the
// parent goes down to the child. A turn with a call to a child agent runs
// its calls one by one. The child's own children run inside its calls, as
// x/agent runs them.
//
// Every call activity runs its call in the turn that made it, rebuilt
// from the ledger (loop.WithTurn: the thread, the answer, the call's
// place in it), so a handler's rules read loop.CurrentTurn as in a loop
// turn; a caller's rules asked about a child's call read the caller's
// turn, found through the child thread's parent links. The child's calls
// count toward each caller's calls_per_run as x/policy counts them in
// process (xtool.Handler.LimitBelow): the count is read from the ledger
// (every call of the child's answers, with the calls made below each), so
// it survives any worker, and a call past the limit is refused in the
// words a child run inside the call reads. When the child ends,
// ChildEndName keeps the count on the caller's thread
// (xtool.RecordBelow), for its later answers. A child workflow is bounded
// by its agent's WithMaxTurns (DefaultMaxTurns when it has none),
// WithMaxTokens (the tokens its turns report, carried in TurnResult) and
// WithTimeLimit (RunInput's MaxTokens and TimeLimit; the turn or call
// running at the limit is cut short, and time spent waiting for a
// decision is not counted, as a resumed loop run starts afresh); it fails
// with ErrTypeMaxTurns, ErrTypeMaxTokens or ErrTypeTimeLimit, and the
// caller's model reads which limit, in x/agent's words.
//
// # Guards
//
// Guards given in the loop options (loop.WithGuards, as lode.yaml's
// guards: gives them to lode worker) stop a run on a worker where they
// stop a loop run, and the thread stores the same tripwire in the same
// turn: the turn activity checks the user's message and the answer, and
// the answer's calls before any runs (loop.Step.CheckCalls); the call
// activity checks each result before it is kept (loop.Step.CheckResults),
// and after a stopped result no other call of the answer starts. The run
// then fails with ErrTypeTripped, a non-retryable application error whose
// details are the artifact.Tripwire; AsTrip reads it back as the
// *loop.TripError, which lode run --temporal and lode resume --temporal
// report as lode run does (exit 4, one line). A retried activity, a
// worker that takes the run over, or a run started again on the thread
// finds the tripwire in the ledger and ends the same way, asking no model
// and running no call again. A child agent's guard ends its child run so,
// and the caller's model reads x/agent's words for it.
//
// # Leases
//
// The model turn holds the thread's lease while the model streams
// (renewed every third of loop.DefaultLeaseTTL); the call activity holds
// it while the tool runs, every call of one turn, and every attempt at
// each, as the same owner, so parallel calls share it. Between activities
// a thread has no lease: point lode recover (loop.Step.Recover) at the
// stores that loop runs use, not at one this workflow runs on, where
// Temporal already continues every run.
//
// # Traces
//
// With TracePropagator on the client that starts a run and on the
// worker's, a run is one trace with the code that started it: the
// header carries the starter's W3C trace context through the workflow,
// which makes no spans, to every activity and child workflow, so each
// turn's and call's spans, on whichever worker, hang under the starter's
// span. Each activity names its run on its spans as a loop run does
// (loop.WithRunIdentity): the thread as gen_ai.conversation.id and
// session.id, and the caller a door wrote on it. The Temporal SDK's own
// OpenTelemetry interceptor is not used: it is a module of its own that
// lode does not require.
//
// An application builds one Agent (New: store, provider, handler) and a
// worker with NewWorker, and starts runs with Start on threads whose
// prompt it has appended.
//
// The lode command with Temporal is cmd/lode in this module (go install
// github.com/lodeworks/lode/x/temporal/cmd/lode): lode worker --temporal
// HOST:PORT runs a worker built from lode.yaml, lode run --temporal starts
// a run on the workers (--thread goes on with a stored thread) and lode
// resume --temporal signals decisions. Every worker and the client share
// one store: (the ledger) and one lease owner. scripts/temporal-dev.sh
// test runs TestRealServerWorkers and TestRealServerKills against a dev
// server of the pinned Temporal CLI: workers SIGKILLed inside a model
// stream, just after an answer, inside a tool, after a tool's work and
// while a run waits for approval, each run finished by another worker,
// approvals signalled from another process, every thread equal to its
// in-process twin, and the time each kind of death cost printed; and
// TestRealServerGuards and TestRealServerWorkerDiesAfterTheTrip, the
// guards of lode.yaml on workers: lode run and lode resume --temporal
// stopped as in process, and a worker that dies once the tripwire is
// stored, its run ended by another that runs nothing again.
//
// Not done here: the calls made by a child's own children, which run
// inside its calls as x/agent runs them, count toward the callers above
// the child once that call ends (x/tool keeps them on the child's thread
// then), not as each is made: the chain of contexts through which x/tool
// counts them stops at the child's call activity. A child's turns count
// toward its limits across waits for decisions (turns, tokens), where a
// resumed loop run counts them afresh. Every call of a child's answers
// counts toward its callers' calls_per_run, as a caller's own calls do in
// its thread; in process, a call the child's handler refuses as unknown
// is not counted.
package temporal
