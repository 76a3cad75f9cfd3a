// Package web serves an agent to people over HTTP: a chat page, and each
// turn streamed as the AI SDK's UI message stream protocol, so that a
// React app using useChat, or the page embedded here, renders it as it
// arrives.
//
//	h, err := web.New(prov, store, web.WithLoopOptions(
//		loop.WithHandlers(xtool.NewHandler(reg)),
//		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, filter)),
//	))
//	mux.Handle("/chat/", http.StripPrefix("/chat", h))
//
// # Routes
//
//	GET  /                         the chat page (embedded; no CDN, no build step)
//	POST /api/chat                 {"id": THREAD, "messages": [...], "trigger": ..., "messageId": ...}:
//	                               run turns, stream them back (the AI SDK's DefaultChatTransport)
//	GET  /api/chat/{id}/stream     resume: the running turn's stream from its start, or the last
//	                               answer replayed; 204 when there is none (reconnectToStream)
//	POST /api/threads              make an empty thread: 201 {"id": THREAD}
//	GET  /api/threads              the caller's conversations, newest first:
//	                               {"threads": [{"id", "title", "updated", "running"}]}
//	GET  /api/threads/{id}         the branch shown as UI messages (useChat's initial messages),
//	                               with each answer's usage and each branch point in its metadata
//	DELETE /api/threads/{id}       delete the conversation and all its branches: 204
//	POST /api/threads/{id}/branch  {"branch": ID}: show another branch; answers as GET (see Branches)
//	GET  /api/info                 what the first screen shows: {"model": NAME, "tools": [{"name", "description"}]}
//	POST /api/threads/{id}/cancel  cancel the turn running on the thread: 204 once it has ended
//	POST /api/threads/{id}/decide  {"decisions": [{"id": CALL, "approve": BOOL, "reason": ..., "arguments": ...}]}:
//	                               decide calls waiting for approval, stream the continued turn;
//	                               409 for a call decided already (see Approvals for the statuses)
//
// POST /api/chat reads only the last message, which must be the user's
// (or the assistant's, answering approval requests: see Approvals): the
// ledger store, not the browser, holds the history. An empty id starts
// a new thread, named in the X-Lode-Thread header and in the start part's
// messageMetadata.threadId; an id no thread has starts a thread with that
// ID, owned by the caller (the AI SDK's Chat names its chat itself); an id
// another caller owns is 404.
//
// Messages have stable IDs: "turn-N" names the message that starts at the
// thread's turn N, in replays and in each stream's start part alike. So a
// stream that continues a message (after a decision) or replays it (a
// resume) updates the client's message instead of adding one.
//
// With "trigger": "regenerate-message" (the SDK's regenerate()), the last
// user message, which is not stored again, is answered anew; a
// "messageId" naming an earlier assistant message (or a user message)
// answers the user message it answers (or that one) anew. A user message
// sent with a "messageId" (the SDK's sendMessage in place of an earlier
// message) takes the place of the stored user message at its place in
// the client's list, which must be the stored thread's. Neither drops
// anything: see Branches.
//
// # Branches
//
// A conversation is the thread the client names (the AI SDK Chat's id).
// An edit or a regenerate forks the conversation's branch shown with
// ledger.Fork, after the turns it keeps, into a new thread, a branch of
// the conversation (ConversationKey names it); stores the edited message
// there (a regenerate stores nothing); points the conversation at the
// branch (BranchKey); and runs the turn on it. The branch left is not
// changed: every earlier answer is kept, and the ledger only appends.
// The fork keeps the turns before the cut as they were, and drops what
// belongs to those after it: a pending approval, the tools their
// searches loaded (x/tool/toolsearch's record), and the usage web keeps
// for their messages, which is blanked in the branch.
//
// Every route takes the conversation's ID and acts on its branch shown:
// a message, a decision, a resume, a cancel, GET and DELETE. What the
// client sees keeps the conversation's ID (X-Lode-Thread, the start
// part's messageMetadata.threadId), and message IDs stay stable: "turn-N"
// is positional, so the messages before a cut have the same IDs on every
// branch, and a Chat whose next sendMessage follows an edit goes on on
// the new branch. A branch's own ID is 404 on every route, and GET
// /api/threads lists conversations only, titled by the branch shown. A
// turn running on a branch holds the conversation: a second request on
// it is 409, here or, by the branch's lease, on another replica.
//
// In GET /api/threads/{id}, a message of which the conversation's
// branches hold other versions has metadata
//
//	{"branch": {"index": 2, "count": 3, "branches": [ID, ID, ID]}}
//
// this is version index (from 1) of count, in the order the branches
// were made (the conversation's own first), and branches[i] is the
// branch that shows version i+1 (the newest branch holding it; this
// message's own is the branch shown). The response's "branch" is the ID
// of the branch shown. POST /api/threads/{id}/branch {"branch": ID} shows
// another: an ID from branches, or the conversation's own ID for its own
// turns; it answers as GET does, and the pointer is in the store, so
// every replica shows the same branch. It answers 400 for a body that is
// not {"branch": ID}, 404 for an ID that is no branch of this caller's
// conversation, and 409 while a turn runs on it; nothing changes then.
// DELETE /api/threads/{id} deletes the conversation with all its
// branches (409 while a turn runs). A regenerate whose turn failed
// before storing an answer leaves a branch with no message where
// branches part; it is still listed among the versions of the others.
//
// # Resuming and stopping
//
// A browser that reloads, or loses its connection, does not stop its turn
// (FinishOnDisconnect). GET /api/chat/{id}/stream, the URL the SDK's
// resumeStream() asks, answers with the running turn's stream from its
// start part, the parts sent so far and then the rest as they come; with
// no turn running it replays the thread's last answer as one stream,
// which the SDK's client takes in place of its last message; a thread
// that ends with a user message (or has none) is 204, as the SDK expects.
// A turn keeps at most WithStreamBufferBytes of its stream for this; one
// that streamed more is 204 until it ends, and is then replayed from the
// store. The SDK's stop() only drops its request: an app stops the turn
// with POST /api/threads/{id}/cancel, or serves with CancelOnDisconnect.
// A stopped turn keeps the text its answer had streamed (within the same
// bound), so the thread shows what the person saw.
//
// In GET /api/threads, title is the first user message of the branch
// shown on one line (at most 80 characters, "" before the first
// message), updated the time of the last change to the conversation or a
// branch (RFC 3339) and running whether a turn runs on it now, here or on
// another replica.
//
// # Several replicas
//
// Handlers in several processes over one store (lode web replicas over
// one PostgreSQL database) serve the same threads. A turn holds its
// thread's lease in the store (ledger.StoredThread.AcquireLease): taken
// before the turn writes anything, renewed every third of WithLease
// (DefaultLease, 30s) while it runs — one small write however many tokens
// stream — and released when it ends; the loop.Step the handler builds
// takes no lease of its own (loop.WithLease(-1)). So while a turn runs on
// one replica, every other one
//
//   - answers a new message, regenerate or decision on the thread with 409
//     ("a turn is running on thread X on another server (OWNER holds its
//     lease until …)"), storing nothing;
//   - shows the thread running in GET /api/threads and GET /api/threads/{id};
//   - follows it on GET /api/chat/{id}/stream: it reloads the thread every
//     tenth of the lease (100ms to 1s) until the lease is released or
//     lapses, then replays the last answer as one stream;
//   - answers POST /api/threads/{id}/cancel with 409: a turn is stopped
//     where it runs.
//
// A decision recorded on any replica runs its call once: the decision
// turn is appended at the version the pending calls were read at, under
// the lease. A replica that dies mid-turn (SIGKILL, a lost host) leaves
// its lease to lapse after at most WithLease; the next message or
// decision, on any replica, takes the thread over, and a call the dead
// turn left without a result is given loop.InterruptedMessage before the
// model is asked again. A replica whose renewal finds the lease taken
// over (it stalled past WithLease) stops its turn and writes nothing
// more. Lease expiry is judged by each reader's clock, so replicas'
// clocks must agree to within a small part of WithLease.
//
// # The stream
//
// The response is Server-Sent Events with the header
// x-vercel-ai-ui-message-stream: v1, one JSON part per event and
// "data: [DONE]" last. lode sends start; start-step and finish-step
// around each model turn and its tool results; text-start/-delta/-end and
// reasoning-start/-delta/-end from the deltas; tool-input-start/-delta as
// a call streams, then tool-input-available (or tool-input-error when the
// model's arguments are not JSON); tool-output-available or
// tool-output-error with the text the model was shown;
// tool-approval-request and tool-output-denied (see Approvals); data-usage
// with each answer's token counts (transient: useChat hands it to onData
// and keeps it out of the message) and message-metadata with the message's
// usage and cost (see Usage and cost); data-tripwire where a guard stopped
// the turn (see Guards); and finally finish, abort (the turn was
// cancelled) or error. Events carry no thread ID, so each request
// builds its own loop.Step from the configured options plus an observer
// for its stream.
//
// # Usage and cost
//
// What an answer's model calls used rides in its message's metadata, as
// the AI SDK has it: each time the message's usage grows the stream sends
// a message-metadata part whose messageMetadata is
//
//	{"usage": {"inputTokens", "cachedInputTokens", "outputTokens", "reasoningTokens", "costUSD", "unpriced"}}
//
// the whole message's total so far (the SDK's client merges metadata key
// by key, so the last one stands), and GET /api/threads/{id} gives each
// assistant message the same "metadata", so a reload shows the figures
// the stream did. The total counts every artifact.Usage of the message's
// model turns, and the usage of calls made for them outside the thread
// (loop.Charge, a loop.UsageEvent: a history policy's summary), which the
// stored turns do not hold: the handler keeps those per message in the
// thread's metadata under "lode.usage." plus the message's ID. A message
// that continues (a decision, a resume) goes on from its stored total.
// costUSD is what loop.WithPricer priced (give it through WithLoopOptions;
// lode web passes its catalog's); unpriced, when set, names the first
// model of the message that had no price ("the model" when the usage
// names none), and costUSD is then the rest's. A usage of no tokens, as
// providers that measure nothing send, is not counted, and a message with
// nothing counted has no usage: no part is sent and the replay has no
// metadata.
//
// # Bounded memory
//
// What one browser can make the server hold is bounded, whatever the size
// of the answer: its response queues at most WithStreamBuffer parts and
// WithStreamBufferBytes bytes (1,024 and 1 MiB by default), and the turn's
// loop.Step queues at most the loop's observer bound (loop.WithObserverBuffer
// and loop.WithObserverBufferBytes, given through WithLoopOptions). When
// both are full the turn waits: a browser that reads slowly slows the
// model's stream, down to the provider's read of its HTTP body, and loses
// nothing. Each write to the browser, flush included, must finish within
// WithWriteTimeout (30s by default); a browser that stops reading has its
// stream ended then, and is treated as one that left. The time a turn
// waits on the model or a tool does not count. A browser that left, or
// disconnected, frees its turn: the turn runs to its end and is stored
// (FinishOnDisconnect, the default) or is cancelled (CancelOnDisconnect).
// Close and Shutdown wait for such a turn, so for at most one write
// timeout when its browser stopped reading.
//
// # Headers
//
// Every response — the page, its script and style, the API, the streams,
// and every refusal — carries
//
//	Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self';
//		connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'
//	X-Frame-Options: DENY
//	X-Content-Type-Options: nosniff
//	Referrer-Policy: no-referrer
//
// so no page of another origin can frame the chat and lure a click onto
// its Approve button, and the page runs nothing but its own scripts: it has
// no inline script, style or event handler.
//
// # Approvals
//
// Approvals are the AI SDK's own. When a tool call waits for a person
// (see loop.PendingError), the stream sends tool-approval-request
// {"approvalId", "toolCallId", "reason"} after the call's
// tool-input-available (the approval's ID is the call's), so the SDK's
// client puts the tool part in state approval-requested; the stream then
// ends with a transient data-approval part for the page, then finish. The
// client answers with addToolApprovalResponse and sends the message back
// (by itself with sendAutomaticallyWhen:
// lastAssistantMessageIsCompleteWithApprovalResponses): POST /api/chat
// whose last message is the assistant's, its tool parts in state
// approval-responded with approval.approved and approval.reason. Each such
// part of a call that waits becomes a decision (By is the caller), and
// the turn goes on as the continuation of the paused message: start with
// its ID, tool-output-denied for a denied call, tool-output-available (or
// -error) as an approved one finishes, then the next model turn's step.
// Approvals for calls that wait for none (decided already) are ignored,
// since the client sends back every part it holds, and if none is left
// the answer is 409.
//
// Replays show the same states: approval-requested while a call waits
// (and the last message ends with the data-approval part), approval-responded
// once decided, output-denied for a denied call, each with its approval
// {"id", "approved", "reason"}.
//
// POST .../decide, the page's way, takes the same decisions as
// {"decisions": [...]} and streams the same continuation. Its data-approval
// part's data is {"threadId", "calls": [{"toolCallId", "toolName",
// "input", "reason"}]}. Approval "arguments" (a JSON object, or a string
// holding one) replace the model's; the stream sends the call's new
// tool-input-available then. Every decision it is sent must be on a call
// that waits.
//
// Both routes refuse a decision with the same status and, where the same
// thing is wrong, the same one-line text body, storing nothing:
//
//   - 409 Conflict: the call waits for no decision: it was decided already
//     (by this caller, or another, on this replica or another) or ran
//     without one ("web: tool call "C" of thread "T" waits for no
//     decision: it was decided already, or ran without one"); also a turn
//     running on the thread.
//   - 400 Bad Request: a malformed request: a body that is not JSON, or a
//     decision that is not a boolean; a call the thread never had ("web:
//     thread "T" has no tool call "C""), which is the body's fault rather
//     than a missing resource, so not 404; on decide, no decisions, a
//     decision with no call ID or given twice, or edited arguments the
//     tool refuses.
//   - 404 Not Found: the thread itself is not the caller's or does not
//     exist.
//
// # Notifications
//
// An event a tool posts to its turn's observers with loop.Notify — an MCP
// server's progress report or log line (mcp.Notification) — is streamed
// when it implements DataEvent: a transient "data-<name>" part whose id is
// the tool call's ID. A notification's data is {"server", "tool", "kind",
// "progress", "total", "message"}. The page shows the latest one under
// the card of the running call, until its result arrives. Other events
// this package does not know are not streamed.
//
// # Callers
//
// WithAuthenticator (an x/auth Authenticator: tokens, session cookies, a
// trusted proxy's header, or auth.Chain of them) decides who sent each
// request; a request it does not authenticate is answered 401 before
// anything runs (503 when it could not check). WithSessions adds the
// page's login: POST /api/login trades {"token": TOKEN} for the session
// cookie (204; 401 for a token it does not know, which is never echoed)
// and POST /api/logout ends the session and clears the cookie (204); both
// pass the Host and cross-origin checks of every other POST. The page
// asks for the token whenever the server answers 401, and offers Log out
// while a session is in use. WithIdentify, the older hook, maps a request
// to an Identity itself; it cannot be given with WithAuthenticator.
//
// The thread's creator is stored under OwnerKey, and only that caller can
// read it, post to it or cancel it; others get the same 404 as for a
// missing thread. The caller's user, tenant and roles are stored under
// UserKey, TenantKey and RoleKey (x/auth's keys) when the thread is made
// and before each turn, from authentication only and never from the
// request body: a ToolFilter reads them, and x/policy's tenants: limits
// bind by TenantKey. ServeHTTP documents its checks and their statuses.
//
// GET /api/info resolves the configured invoke options (loop.Step.Request)
// as a turn of the caller would, on an empty thread of the caller's or,
// with ?thread=ID, on one of the caller's threads, with the caller's role
// under RoleKey: its tools are those the caller's next turn is offered,
// after every filter and policy. model is the provider's Model(), when it
// has one; user is the authenticated caller, and session says the request
// came with a session cookie. Nothing is stored; a filter that fails is
// 500.
//
// # Stopped answers and errors
//
// A turn cancelled while it streams (Stop, a browser that left under
// CancelOnDisconnect, Close) stores its answer as an assistant turn of the
// text streamed so far and an artifact.Finish with StoppedReason; a
// replay ends that message with a data-stopped part, so a reload shows
// the text and "Stopped." as before. A failed turn's stream ends with a
// transient data-error part, {"message", "detail"}, then error: errorText
// and message are one plain sentence ("The model server could not be
// reached."), and detail the whole error on one line, which the page
// keeps behind a Details toggle.
//
// # Guards
//
// Guards given through WithLoopOptions (loop.WithGuards) check the user's
// message, each call, each result and the answer; when one stops the
// turn (a loop.TripError; the thread stores an artifact.Tripwire where it
// stopped) the stream sends a data-tripwire part
//
//	{"type": "data-tripwire", "id": "tripwire",
//	 "data": {"guard": G, "at": "input"|"call"|"result"|"output", "reason": R, "toolCallId": CALL}}
//
// (toolCallId only at call and result), not transient, so a useChat
// client keeps it in the message, then ends as a normal turn does:
// finish-step, finish with finishReason "content-filter", [DONE]. A trip
// is an outcome, not a server failure: no error part is sent, and the
// thread takes the next user message as any other. GET /api/threads/{id}
// shows the same part in the same message, from the stored Tripwire, as
// does the replay of GET /api/chat/{id}/stream:
//
//   - input: the user's message stands, and is followed by an assistant
//     message of one step holding only the part; the model never saw
//     the message, and is never sent it later.
//   - output: the answer's step holds the part and no text: the stopped
//     answer is not stored.
//   - call: the part follows the tool parts of the answer whose calls it
//     stopped; none ran, and each is in state output-error with the
//     error the model is given ("stopped: guard G withheld this call: R",
//     "not run: ..." for the others).
//   - result: the same, the stopped result replaced by
//     "stopped: guard G withheld this result: R"; a call that waited for
//     approval then, or had not started, gets its "not run" error in the
//     stream too, and waits for nothing.
//
// What a guard stops never reaches the stream: a result is checked before
// observers see it, and, with an output guard, the loop holds the
// answer's deltas back from its observers (this handler is one) until the
// guard has passed the text before them. So text reaches the page up to
// loop.WithOutputWindow bytes behind the model (loop.DefaultOutputWindow,
// 256 bytes): the answer so far is checked each time that many more bytes
// have come, and only what lies a window before the checked end is
// released, so a stopped phrase no longer than the window is never shown,
// even in part. A larger window checks less often and shows text later; a
// guard that can only judge a whole answer (loop.ErrHold) holds it all
// until it ends. The text streamed before an output guard stopped the
// answer was judged clean, but the reload has none of it: the page takes
// it away when the data-tripwire part at "output" comes, and a useChat
// client should drop the parts of the step that part ends likewise.
//
// Regenerating a tripped answer asks the guards again: an input guard
// that still trips streams the same trip (the model is not asked), and an
// answer an output guard stopped is answered anew.
//
// # The page
//
// The embedded page (page/index.html, markdown.js, app.js, app.css; no
// library, no build step) shows the model and the offered tools on its
// first screen, the caller's threads (GET /api/threads) to switch between
// and a New chat button, answers in Markdown with code blocks, tool cards
// labelled with the tool's name, Input and Output (or Error, or Denied),
// approval cards built from the thread's data-approval part, so that a
// reload or another device shows them, a guard's trip as a notice ("Stopped
// by guard G: R", then "Your message was not sent to the model.", "The
// call did not run.", "The tool's result was withheld." or "The answer was
// withheld."), a running turn followed again
// after a reload (GET /api/chat/{id}/stream), and under each answer what
// it used ("1,280 tokens in (640 cached), 64 out, $0.0123", or "; no
// price for MODEL" in place of the cost), from its message's metadata,
// with the thread's total in the header; an Edit button on each stored
// message and a Regenerate button on each stored answer, which make a
// branch (see Branches), and "‹ 2/3 ›" at a message with versions on
// other branches, whose arrows show the branch of the version before or
// after. Its Markdown renderer
// (markdown.js) builds DOM nodes and sets only textContent: model, tool
// and user text can make paragraphs, headings, lists, quotes, emphasis,
// code and links, nothing else, and links only to http: and https:
// addresses, with rel="noopener noreferrer". It takes time linear in the
// text, whatever the text; quotes and lists nest at most 24 deep and
// emphasis 16, and deeper text shows as written. A growing answer is
// rendered again at most every 100 ms (longer when a render is slow), and
// once whole when it ends. Text the renderer fails on anyway is shown as
// written, with a note, and the rest of the thread (later messages,
// approval cards, the composer) still works.
//
// The Host and cross-origin checks are this package's own; x/tool/mcp has
// equivalent ones, and the two could share one internal middleware.
package web
