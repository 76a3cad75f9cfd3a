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
// notifications/tools/list_changed, bounds each request (WithCallTimeout),
// and reconnects on the next call after the server dies: the call that
// was in flight fails with ErrConnectionLost, which the tool handler
// turns into an error result, never a hang (a server that forgot an HTTP
// session, having restarted, gets the call again on a new session, since
// it never ran it). Close ends calls in flight and stops everything the
// client started, including processes a stdio server started itself.
//
// Results map onto tool.Result: text, and the text of embedded resources,
// become Content; images, audio, binary resources and resource links become
// artifact.Image, Audio, Resource and ResourceLink parts (noted in Content in
// brackets); structured content becomes Value; isError becomes IsError.
// MCP's annotation defaults apply to hints: a tool that does not say it is
// read-only or non-destructive is taken as Destructive.
//
// A Server serves any tool.Registry — so any set of packs — over stdio
// (ServeStdio), streamable HTTP (the Server is an http.Handler; Serve and
// ListenAndServe mount it at /mcp) or any go-sdk transport. Every call
// runs through an xtool.Handler: an unknown tool, bad arguments, the
// tool's error, a panic or a timeout is a result with isError set in an
// HTTP 200. WithIdentify turns each HTTP request into the ledger.State
// that WithFilter sees, both for tools/list and again on every tools/call;
// a call to a tool the filter hides gets exactly the result of a call to
// one that does not exist, naming the tools the caller may use.
// Host and Origin headers must be loopback unless allowed (DNS-rebinding
// protection) and bodies are bounded. Tools that need the MCP session
// (progress, logging, sampling, elicitation) find it with CallRequest.
// Prompts and resources go straight onto the go-sdk server (SDK).
//
// The registry's tools are re-read whenever a request finds its snapshot
// changed, or at Refresh; connected clients are then sent
// notifications/tools/list_changed.
package mcp
