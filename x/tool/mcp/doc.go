// Package mcp connects lode's tools to the Model Context Protocol, both
// ways, on the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// A Client mounts an MCP server into a registry as a tool.RemoteSource:
//
//	fs, err := mcp.NewClient(mcp.WithName("filesystem"), mcp.WithStdio("python", "server.py"))
//	if err != nil { ... }
//	defer fs.Close()
//	registry := tool.NewRegistry(tool.WithMCPServer(fs))
//
// It speaks stdio (WithStdio, WithEnv) or streamable HTTP (WithHTTP,
// WithHeader, WithHTTPClient), connects lazily on first use (or at
// Connect), caches the tool list and refreshes it on
// notifications/tools/list_changed, and reconnects on the next call after
// the server dies: the call that was in flight fails with
// ErrConnectionLost, which the tool handler turns into an error result,
// never a hang (a server that forgot an HTTP session, having restarted,
// gets the call again on a new session, since it never ran it).
// Connecting is bounded on its own (DefaultConnectTimeout unless
// WithConnectTimeout says otherwise), since a server's start is often the
// slow part. Each request is bounded once connected (DefaultCallTimeout
// unless WithCallTimeout says otherwise); one that runs out of time, or past its caller's deadline,
// is cancelled (notifications/cancelled, as for a caller that cancels) and
// the server is pinged (WithPingTimeout). A server that answers is only
// slow and keeps its session; one that does not is hung, and its session
// is dropped — a stdio server is stopped — so the next call reconnects,
// and the other calls waiting on that session fail at once with
// ErrTimeout. Close ends calls in flight and stops everything the client
// started, including processes a stdio server started itself.
//
// # What a client offers a server
//
// The client advertises only what the application configured:
//
//   - Elicitation (WithElicitation): a server asks the person for input,
//     as a form described by a flat schema or as a link to open; the
//     Elicitor answers, and properties an accepted form leaves out get the
//     schema's defaults. Without an Elicitor the client still accepts form
//     requests and declines each one, so a server gets a polite no.
//   - Sampling (WithSampling), off by default: a server's prompt goes to the
//     provider the application names, each answer capped
//     (WithSamplingMaxTokens, DefaultSamplingMaxTokens) and optionally
//     shown to a person first (WithSamplingApproval). Only text is sampled.
//   - Roots (WithRoots): the directories a server may work in, as file URIs.
//   - Notifications: progress reports of tool calls and log messages, as
//     Notification values (a loop.Event). A call made inside a loop turn
//     carries a progress token, and what the server reports for it goes to
//     that turn's observers through loop.Notify, with no option to set;
//     log messages, which name no call, go to the turn of the call started
//     last. WithNotifications adds a callback for the reports no turn
//     took, asks for progress on calls made outside a turn too, and asks
//     for log messages at level info and above once connected.
//   - OAuth (WithOAuth) for HTTP servers, on the go-sdk's auth package:
//     metadata discovery, pre-registered clients, client ID metadata
//     documents, dynamic registration, scope step-up. The client passes
//     the official conformance suite's client scenarios that the go-sdk's
//     own client passes (see conformance_test.go).
//
// Results map onto tool.Result: text, and the text of embedded resources,
// become Content; images, audio, binary resources and resource links become
// artifact.Image, Audio, Resource and ResourceLink parts (noted in Content in
// brackets); structured content becomes Value; isError becomes IsError.
// MCP's annotation defaults apply to hints: a tool that does not say it is
// read-only or non-destructive is taken as Destructive (so a Handler with
// an approver asks about every call to it), unless the application vouches
// for the server's tools with WithReadOnly or WithTrusted. Every tool of a
// server is hinted Untrusted (its output may carry text written by
// others, which x/policy's flow rules act on) unless WithLabels says
// otherwise; WithLabels also marks tools Private or SendsOut. A tool's title,
// output schema and annotations are kept as the server gave them
// (tool.Tool's Title, OutputSchema, Annotations), so that a Server serving
// the registry again says the same of it. A tool the server runs only as an
// MCP task (execution.taskSupport "required") is left out of the list on
// every transport (over streamable HTTP, by rewriting the answer before the
// go-sdk reads it): the go-sdk has no tasks, so every call to it would fail,
// and a Server serving the registry again never offers it.
//
// A Server serves any tool.Registry — so any set of packs — over stdio
// (ServeStdio, or ServeIO over any pair of streams), streamable HTTP (the
// Server is an http.Handler; Serve and ListenAndServe mount it at /mcp) or
// any go-sdk transport. On stdio a line that is not a JSON-RPC message is
// answered with a parse error (-32700) or an invalid-request error
// (-32600), a line longer than WithMaxBodyBytes is refused without being
// held in memory, and the session goes on; when stdin ends, every request
// already read is answered before ServeStdio returns. Every call
// runs through an xtool.Handler: an unknown tool, bad arguments, the
// tool's error, a panic or a timeout is a result with isError set in an
// HTTP 200. WithIdentify turns each HTTP request into the ledger.State
// that WithFilter sees, both for tools/list and again on every tools/call;
// a call to a tool the filter hides gets exactly the result of a call to
// one that does not exist, naming the tools the caller may use.
// The flow labels a call brings in (ledger.Label; see x/policy's flows)
// are written on that state: WithState's lives as long as the server, and
// a state WithIdentify makes for one request gets, before each tools/list
// and tools/call, the labels its MCP session took in before, so a flow
// holds across a session's requests (for its live sessions only).
// Host and Origin headers must be loopback unless allowed (DNS-rebinding
// protection) and bodies are bounded. What a served tool reports with
// xtool.Progress reaches the client as notifications/progress when its
// call carried a progress token, and xtool.Log as notifications/message at
// or above the level the client asked for. Tools that need more of the MCP
// session (sampling, elicitation) find it with CallRequest.
// Prompts and resources go straight onto the go-sdk server (SDK).
//
// The registry's tools are re-read whenever a request finds its snapshot
// changed, or at Refresh; connected clients are then sent
// notifications/tools/list_changed.
//
// # Approvals at the server
//
// MCP has no approval step of its own, so a Server whose Handler gates calls
// (xtool.WithApprover, WithApprovalFor, WithApprovalRule, destructive tools)
// should give it AskClient as its Approver: each call that needs approval is
// put to the person behind the client through elicitation — a form naming
// the tool, its arguments and the reason, asking for approve (a boolean)
// and an optional reason. Only an accepted answer with approve true runs
// the call, once; a decline, a cancel, approve false, a failed elicitation
// or no answer in time (WithAskTimeout) refuse it. A client that declared
// no elicitation capability cannot be asked, so the call fails closed: an
// error result (isError, HTTP 200) saying that it needs a person's
// approval, why, and what to do (WithAskHint); it never runs. From revision
// 2026-07-28 on the question travels in an input-required result and the
// answer in the client's retry, bound to the call by a signed state.
// xtool.PauseForDecision is no choice here: a server cannot pause a caller's run.
//
//	h := xtool.NewHandler(reg, xtool.WithApprover(mcp.AskClient()), xtool.WithApprovalFor("wipe"))
//	srv, err := mcp.NewServer(reg, mcp.WithHandler(h))
//
// # Protocol revisions
//
// The server speaks every revision the go-sdk does, 2026-07-28 included
// (over stdio, and over HTTP when WithStateless; stateful HTTP sessions use
// the revisions before it). The tools/call results it builds itself carry
// resultType "complete" when the request's revision requires it, and leave
// it out for earlier revisions.
//
// # Trace context
//
// W3C trace context crosses MCP in each request's _meta under the keys the
// specification reserves (SEP-414): "traceparent", "tracestate" and
// "baggage". The Client sends the context of the span its caller is in (the
// tool handler's execute_tool span) with every tools/call; the Server
// continues the trace a request names, so its request span and the
// execution under it join the caller's trace, across processes and
// transports; and the requests a served tool makes of its client
// (sampling, elicitation) carry the execution's context back. A missing or malformed context starts a new trace and never
// fails the request.
package mcp
