// Package a2a speaks the Agent2Agent protocol (A2A): it serves a lode
// agent (model, tools, policy, approvals, guards, history) to any A2A
// client, through the official Go SDK (github.com/a2aproject/a2a-go/v2).
// It is a module of its own so that the A2A SDK and its gRPC weight never
// enter the root module's graph; the lode command that serves A2A (lode
// serve --a2a) is x/a2a/cmd/lode.
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
// change: the context's thread holds the answer in full anyway.
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
// cancelled while it waited has its calls denied when the next message
// comes on the context. A turn does not stop when its caller's
// connection drops: SubscribeToTask follows it again. Close, and a killed
// process, leave working tasks as last stored; Recover, in the next
// process over the store, runs them on from their threads.
//
// # Push notifications
//
// Off unless WithPushDestinations lists URL prefixes; a push config whose
// URL is under none of them is refused, so a caller cannot make the
// server post where it likes.
package a2a
