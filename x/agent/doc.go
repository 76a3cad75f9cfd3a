// Package agent mounts an agent — a provider, its own tools and filter, a
// system prompt, limits, optionally a typed answer — as one tool of
// another agent. The parent model passes a task (by default {"task":
// string}; WithInput sets a schema-checked input of any type), the child
// runs its own loop to completion on a thread of its own, and its answer is
// the tool's result: the text of its last turn, or with WithOutput a typed
// answer that x/output validated (and let the child retry), as JSON.
//
//	summariser, err := agent.New("summarise", "Summarise a text in one sentence.",
//		agent.WithProvider(model), agent.WithSystemPrompt("Be brief."))
//	err = agent.Register(registry, summariser)
//
// # Threads
//
// Each call runs on a new thread, kept in the WithStore store (in memory
// without one). The child's metadata names the agent (MetaAgent), its depth
// (MetaDepth), the parent's thread (MetaParentThread), the tool call
// that started it (MetaParentCall) and the outermost run's thread, which
// its spans name as session.id (MetaSession); the parent thread gets the key
// MetaChildPrefix+callID naming the child thread. The child also carries
// its caller's identity, copied from the parent thread: the user, tenant
// and roles under x/auth's UserKey, TenantKey and RolesKey (never from the
// model's arguments), so x/policy's roles and tenants: limits bind the
// child as they bind its caller. Its flow labels (ledger.Label) start as
// its caller's, and what it takes in flows back: each call below the
// caller's labels the caller's thread as it runs (x/tool), and when the
// child's run ends every label of its thread is added to the caller's —
// a child that read a web page makes its caller's context untrusted, so
// the caller's flow rules (x/policy) bind both. Observers of the parent
// find the child's Outcome on the tool result with OutcomeOf.
//
// # Tracing
//
// The child runs in the context of the parent's execute_tool span, so with
// WithTracer its run, turn, chat and execute_tool spans nest under it; the
// execute_tool span also gets lode.agent.thread.id and lode.agent.depth.
//
// # Limits and failure
//
// Depth travels in the context: the top-level loop is depth 0 and a child
// runs at its caller's depth + 1. An agent refuses to start below
// WithMaxDepth (DefaultMaxDepth, 3), which ends an agent that mounts
// itself. Each run is bounded by WithMaxTurns (DefaultMaxTurns),
// WithMaxTokens (none by default) and WithTimeLimit (DefaultTimeLimit).
// Every failure — the depth limit, a limit reached, the provider, the
// store, an invalid typed answer — is an error result with a message the
// parent model can act on; the parent's loop goes on, and the Go error is
// in Outcome.Err.
//
// # Limits across the tree
//
// The caller's rule book counts the child's calls as the caller's: a
// Handler with a Gate (x/policy's HandlerOptions) is asked about every
// call made below its call to the agent, and x/policy charges each to the
// caller's calls_per_run, at any depth. The child's own limits
// (WithMaxTurns, WithMaxTokens, WithTimeLimit) bind its run besides.
//
// # Tools never widen
//
// A child may not use a tool its caller was denied. When a call starts,
// the names its caller's turn did not offer, among the tools of the
// registry the agent was registered in, are denied; denials made further
// up carry down through the context. Each child turn offers what its own
// filter picks minus the denied names, and its handler refuses the rest.
// Tools are matched by name: one the child registers under a name its
// parent does not hold is its own, granted with the agent. WithWidening
// lets an agent ignore the denials of its callers, as an explicit choice
// of the application.
//
// # Approvals
//
// A call that needs approval for the caller needs it in the child, at any
// depth: the caller's x/tool Handler (its destructive hints, its
// WithApprovalFor names, its rules, x/policy's approve: lists among them)
// gates every call made below its call to the agent, asked in the caller's
// context, so a policy rule reads the caller's roles, not the child
// thread's; tools are matched by name, as for denials. WithWidening does
// not lift this: it widens what a child may use, never what runs without
// a person. The child's own approver (WithHandlerOptions) is asked too, and
// any refusal refuses the call.
//
// An approver that answers at once gives the child that answer, as it
// would the caller. One that defers (x/tool's PauseForDecision, which
// every lode door uses) pauses the child: its thread is kept, paused, in the store
// (in the Agent's memory without WithStore, for the life of the process;
// another process gets an error result wrapping ErrNotKept), and the
// parent's call becomes pending in turn, so the parent's loop.Run returns
// a *loop.PendingError listing the parent's call, with a reason naming the
// child's waiting calls and their arguments. Resuming the parent with that
// call approved resumes the child, approving exactly the calls the pause
// listed (MetaAwaiting notes them on the child thread); a call the child
// makes after that waits again, and pauses the parent's same call again.
// The child's answer becomes the call's result. A pause nothing could
// resume (a call from outside a loop turn, such as an MCP request) fails
// closed: the child's waiting calls are denied and the call is an error
// result.
//
// Denying the parent's call gives the parent's model the denial and runs
// nothing below. The agent is not called for a denied call, so the child
// thread keeps its pending calls (and, without WithStore, the Agent keeps
// the thread): the agent never resumes it, though a person may resume it
// directly as any paused thread (MetaParentThread tells it from a top-level
// one). Approving the parent's call with edited arguments starts a fresh
// child with the edited task (whose calls need approval in their turn) and
// denies the paused child's calls, so it does not stay paused.
//
// The child's approved calls run at most once: a second resumer of the
// parent loses the store's compare-and-swap, a resumer of the child too,
// and a parent call run again under the same approval (an idempotent
// retry) finds the child finished and answers with its answer. A typed
// child (WithOutput) that paused goes on, once resumed, on its plain
// provider (x/output's final-answer tool and response format are not
// offered again), and its last text is decoded as the type, without
// further attempts.
package agent
