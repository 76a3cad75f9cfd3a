package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func add(_ context.Context, in addArgs) (float64, error) { return in.A + in.B, nil }

// Mounting an MCP server: its tools join the registry as "<name>__<tool>"
// and a loop calls them like any other. The server here runs in process;
// a real one is mounted the same way with WithStdio or WithHTTP.
func ExampleNewClient() {
	served := tool.NewRegistry()
	if err := tool.RegisterFunc(served, "add", "Adds two numbers", add); err != nil {
		fmt.Println(err)
		return
	}
	srv, err := mcp.NewServer(served)
	if err != nil {
		fmt.Println(err)
		return
	}

	calc, err := mcp.NewClient(mcp.WithName("calc"), mcp.WithInProcess(srv))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer calc.Close()
	registry := tool.NewRegistry(tool.WithMCPServer(calc))
	for _, t := range registry.Tools() {
		fmt.Println("tool:", t.Name)
	}

	prov := script.Play(script.Call("c1", "calc__add", `{"a":2,"b":40}`), script.Text("2 + 40 = 42"))
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(registry)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(registry, nil)),
	)
	state := ledger.NewThread()
	_ = state.Append(ledger.RoleUser, artifact.Text{Content: "What is 2 + 40?"})
	if _, err := step.Run(context.Background(), state, prov); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("result:", state.Turns()[2].Artifacts[0].(artifact.ToolResult).Content)
	// Output:
	// tool: calc__add
	// result: 42
}

// Serving a registry over streamable HTTP: mount the Server at /mcp. Any
// MCP client can then call its tools; here, lode's own.
func ExampleServer_ServeHTTP() {
	registry := tool.NewRegistry()
	if err := tool.RegisterFunc(registry, "add", "Adds two numbers", add); err != nil {
		fmt.Println(err)
		return
	}
	srv, err := mcp.NewServer(registry)
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	ts := httptest.NewServer(mux) // srv.ListenAndServe(ctx, addr) outside tests
	defer ts.Close()

	c, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithHTTP(ts.URL+"/mcp"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	v, err := c.Call(context.Background(), "add", map[string]any{"a": 1, "b": 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.(*tool.Result).Content)
	v, _ = c.Call(context.Background(), "add", map[string]any{"a": "one"})
	r := v.(*tool.Result)
	fmt.Println(r.IsError, r.Content)
	// Output:
	// 3
	// true invalid arguments for add: arguments do not match the schema: validating root: validating /properties/a: type: one has type "string", want "number". The arguments you sent were: "{\"a\":\"one\"}"
}

// Per-caller tools: the identity hook turns a bearer token into the state
// the filter sees, for tools/list and again for every tools/call.
func ExampleWithIdentify() {
	registry := tool.NewRegistry()
	_ = registry.Register(tool.Tool{Name: "read_ticket", Hints: tool.Hints{ReadOnly: true}},
		func(context.Context, tool.Sandbox, map[string]any) (any, error) {
			return "ticket 7: printer on fire", nil
		})
	_ = registry.Register(tool.Tool{Name: "close_ticket", Hints: tool.Hints{Destructive: true}},
		func(context.Context, tool.Sandbox, map[string]any) (any, error) { return "closed", nil })

	identify := func(r *http.Request) (ledger.State, error) {
		if r.Header.Get("Authorization") != "Bearer viewer-token" {
			return nil, errors.New("unknown token")
		}
		return ledger.NewThread(ledger.WithMetadata(map[string]string{"role": "viewer"})), nil
	}
	readOnly := func(_ context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
		var out []tool.Tool
		for _, t := range tools {
			if role, _ := st.Metadata("role"); role == "admin" || t.Hints.ReadOnly {
				out = append(out, t)
			}
		}
		return out
	}
	srv, err := mcp.NewServer(registry, mcp.WithIdentify(identify), mcp.WithFilter(readOnly))
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	viewer, _ := mcp.NewClient(mcp.WithName("tickets"), mcp.WithHTTP(ts.URL), mcp.WithHeader("Authorization", "Bearer viewer-token"))
	defer viewer.Close()
	tools, _ := viewer.Tools(context.Background())
	fmt.Println(len(tools), tools[0].Name)
	v, _ := viewer.Call(context.Background(), "close_ticket", nil)
	fmt.Println(v.(*tool.Result).Content)
	// Output:
	// 1 read_ticket
	// unknown tool "close_ticket". Tools available to this caller: read_ticket.
}
