// Command mcpfixture serves lode's MCP conformance fixture pack, and plays
// the client side of the MCP conformance suite with lode's MCP client.
//
//	mcpfixture serve                  serve over stdin/stdout
//	mcpfixture serve -http ADDR       serve streamable HTTP at http://ADDR/mcp;
//	                                  prints "listening on http://HOST:PORT/mcp"
//	mcpfixture client URL             connect to URL, list the tools, call
//	                                  those the scenario offers, and exit;
//	                                  elicitations are accepted with the
//	                                  schema defaults, and auth/ scenarios
//	                                  authorise with the go-sdk's OAuth
//
// The conformance suite runs the client as
// `conformance client --command "mcpfixture client" --scenario tools_call`,
// appending the scenario server's URL; MCP_CONFORMANCE_SCENARIO names the
// scenario, and MCP_CONFORMANCE_CONTEXT may hold a pre-registered client's
// client_id and client_secret.
package main
