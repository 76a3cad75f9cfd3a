// Package a2a speaks the Agent2Agent protocol (A2A) both ways, through the
// official Go SDK (github.com/a2aproject/a2a-go/v2): it serves a lode agent
// (model, tools, policy, approvals, guards, history) to any A2A client, and
// mounts a remote A2A agent's skills as tools (see Calling other agents).
// It is a module of its own so that the A2A SDK and its gRPC weight never
// enter the root module's graph; the lode command that speaks A2A (lode
// serve --a2a, lode.yaml's a2a:) is x/a2a/cmd/lode.
//
//	srv, err := a2a.NewServer(prov, store,
//		a2a.WithLoopOptions(
//			loop.WithHandlers(xtool.NewHandler(reg, xtool.WithApprover(xtool.PauseForDecision), xtool.WithApprovalRule(needs))),
//			loop.WithInvokeOptions(xtool.WithFilteredTools(reg, filter)),
//		),
//		a2a.WithTools(reg.Tools()...),
//		a2a.WithAuthenticator(tokens),
//	)
//	if err != nil { ... }
//	defer srv.Close()
//	if _, err := srv.Recover(ctx); err != nil { ... } // tasks a killed process left working
//	err = srv.Serve(ctx, ln)
//
// A caller resolves the card at /.well-known/agent-card.json and sends a
// message; the task it gets back ends completed, with the answer in its
// "answer" artifact, or input-required when a tool call waits for
// approval.
//
// # What the server serves
//
// At "/", JSON-RPC: A2A 1.0's methods (SendMessage, SendStreamingMessage,
// GetTask, ListTasks, CancelTask, SubscribeToTask, the push config
// methods) and, told apart by their names, A2A 0.3's (message/send,
// message/stream, tasks/get, tasks/cancel, tasks/resubscribe…). At the
// other paths, 1.0's HTTP+JSON binding (POST /message:send, GET
// /tasks/{id}…). The agent card lists the three interfaces; it says
// streaming is supported (every text delta of the model is an artifact
// chunk), push notifications only when WithPushDestinations names where
// they may go, and a bearer security scheme only when WithAuthenticator
// is set. Its skills are WithSkills', else one per tool of WithTools.
//
// The answer is the task's artifact AnswerArtifact ("answer"). A stream
// (SendStreamingMessage, message/stream) gets it as the model writes it,
// one appended part per text delta; a caller of SendMessage, which reads
// the task once the turn ends, gets each turn's text as one part.
//
// # Contexts, tasks and the store
//
// An A2A context is a lode thread in the store, ContextPrefix plus the
// contextId: each message on the context appends the caller's text (its
// data parts as JSON) to the thread and runs the loop on it, so the model
// sees the whole conversation however many tasks it took. A contextId
// that cannot name a thread (ledger.CheckID) is refused, never cleaned
// into another. A task is recorded in a thread of its own, TaskPrefix
// plus the taskId, under TaskKey: every status change is written before
// the caller hears of it, so GetTask and SubscribeToTask find the task
// after a restart. Artifact chunks are written with the next status
// change: the context's thread holds the answer in full anyway. A task's
// thread has no turns, and lode threads leaves it out.
//
// ListTasks lists the caller's tasks a page at a time in the order of
// their IDs: pageSize of them (50 by default, 100 at most; more is
// refused), after the task pageToken names (the nextPageToken of the
// page before; a token it did not give is refused). It holds one page in
// memory; totalSize counts every match, so each call still reads every
// task's record in the store (ledger.Store lists by ID, with no seek).
//
// One task runs on a context at a time; a message on a context with a
// task running, or one waiting for a decision, is refused with a message
// saying which task to wait for or to answer.
//
// # Approvals: input-required
//
// A call the handler's approval rule holds (x/tool's PauseForDecision)
// pauses the run, and the task ends its turn input-required. Its status
// message lists the calls as text and as a data part:
//
//	{"pending": [{"id": "c1", "name": "delete_ticket", "arguments": "{\"id\":7}", "reason": "..."}]}
//
// The caller answers on the task (its taskId) with a data part
//
//	{"decisions": [{"id": "c1", "approve": true}, {"id": "c2", "approve": false, "reason": "not today"}]}
//
// ("arguments", on an approval, replace the model's), or with the text
// "approve" or "deny" (or "deny: REASON") for every call waiting. A
// message on the context that decides this way answers the task waiting,
// as ADK's remote agents send it. Calls left undecided keep the task
// waiting. Decisions go through loop.Resume: an approved call runs once,
// whatever the caller sends again. An answer to a task that is no longer
// waiting is refused with a message saying the decision was applied; one
// that names a call not waiting, decides one twice, has no "approve" or
// a field the form does not have, is refused and leaves the task
// waiting. Nothing the caller sends skips an approval or runs a tool the
// turn's filter did not offer.
//
// # Identity
//
// With WithAuthenticator (x/auth's tokens or trusted proxy, as lode web
// and lode serve --http use), every request but the card's must
// authenticate: one that does not is answered 401 with a WWW-Authenticate
// header, and nothing runs. The identity (user, tenant, roles) is written
// on the context's thread, where x/policy reads the roles and tenant, and
// owns the contexts and tasks the caller makes: another caller's task or
// context is not found. Without an authenticator every caller is one
// anonymous caller, holding WithAnonymousRoles.
//
// # Cancelling, resubscribing, stopping
//
// CancelTask stops the turn running (its context is cancelled; the
// thread keeps what was stored) and ends the task canceled; a task
// cancelled while it waited has its calls denied at once, through
// loop.Step.Resume, so the context's thread holds the decisions and the
// next message starts clean. A turn does not stop when its caller's
// connection drops: SubscribeToTask follows it again. Close, and a killed
// process, leave working tasks as last stored; Recover, in the next
// process over the store, runs them on from their threads.
//
// # Usage
//
// Each status that ends a turn (completed, input-required, failed), and
// so the task, carries the task's usage so far under MetaUsage, with the
// model that answered (the provider's Model, when an answer names none),
// so that a lode calling this one charges it to its run. Answers by
// several models are reported under their names joined by commas, which
// no price list knows. It counts the model's answers only, not what the
// turn's tools charged with loop.Charge.
//
// # Push notifications
//
// Off unless WithPushDestinations lists URL prefixes; a push config whose
// URL is under none of them is refused, so a caller cannot make the
// server post where it likes.
//
// # Calling other agents
//
// Mount (or NewRemote, then tool.Registry.Mount) reads a remote agent's
// card and makes each of its skills a tool, "<name>__<skill>", in the flat
// namespace every other source shares:
//
//	remote, err := a2a.Mount(ctx, reg, "https://billing.example",
//		a2a.WithBearerToken(os.Getenv("BILLING_TOKEN")))
//
// A call is one remote task: its arguments are {"task": text} (and, to
// answer a question the agent asked, the task_id and context_id its
// answer gave). What this half decides:
//
//   - The card is bounded (MaxCard bytes, MaxSkills skills) and checked:
//     JSON of the right shape, in A2A 1.0's form or 0.3's; every skill has
//     an id, and no two ids become the same tool name; at least one
//     endpoint speaks JSON-RPC or HTTP+JSON over http(s). Anything else is
//     an error wrapping ErrCard, at mount time.
//   - The task is streamed when the card says the agent streams.
//     Otherwise SendMessage asks the agent to return at once with its task
//     (returnImmediately; 0.3's blocking: false) and GetTask reads it,
//     with a growing pause up to two seconds, until it settles, so that
//     the task's ID is known and a cancel can reach it (an answer to a
//     task that asked for input, whose ID is known, waits blocking). A
//     stream that
//     breaks before its task ends is picked up again with SubscribeToTask
//     (three times at most), and polling stops after three failed
//     GetTasks in a row. It is bounded by WithTimeout
//     (DefaultTimeout); when that passes, or the turn's context ends, lode
//     sends the agent a cancel for the task. What the model reads is cut to
//     WithMaxResult bytes with a marker; a response past DefaultMaxResponse
//     is refused.
//   - Failed, rejected and cancelled tasks, a task needing authentication,
//     and a timeout are error results the model can act on. A question
//     back (input-required) is a plain result saying what the agent asks
//     and how to answer: the call never hangs waiting for input.
//   - Every skill is hinted Destructive and OpenWorld unless WithReadOnly,
//     so a handler with an approver asks a person before each call, as it
//     does for an MCP tool without annotations; approve: rules and roles
//     bind a mounted agent's tools as any other tool's, and a tool a role
//     forbids is never called. The answer is untrusted for flow rules
//     (WithLabels changes that): once a call ran, the caller's thread is
//     labelled ledger.LabelUntrusted.
//   - Credentials (WithBearerToken, WithHeader) go to the origin of the URL
//     given to Mount only: an endpoint the card names on another origin,
//     or a redirect, gets none. Every request carries W3C trace context
//     (traceparent, baggage) from the call's span.
//   - The caller's user, tenant and roles, read from its thread, go as the
//     task's metadata under MetaCaller, and the skill under MetaSkill. Usage
//     the agent reports under MetaUsage is charged to the caller's run
//     (loop.Charge), so its cost limit counts remote work; without it, the
//     usage adk-go's adka2a reports with each streamed model call is added
//     up and charged. Usage that names no model is charged under
//     UnnamedModel(name), which no price list knows, so with a cost limit
//     the run stops after the turn with an error matching loop.ErrUnpriced
//     that quotes it: never taken as free.
//   - JSON-RPC request IDs are numbered in order and message IDs named
//     after the tool call, so a session recorded with x/cassette (through
//     WithHTTPClient) replays.
//
// The command line mounts lode.yaml's a2a: entries with the binary built
// from this module (x/a2a/cmd/lode); the root module's lode refuses them.
package a2a
