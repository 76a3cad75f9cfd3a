// Command mcp mounts an MCP server into a registry as a tool source and lets
// a (scripted) model use it through the loop.
//
// With no arguments it starts a server of its own — lode's calculator pack
// served over streamable HTTP on loopback — and mounts it by URL. Given a
// command, it mounts that server over stdio and lists its tools:
//
//	go run ./examples/mcp
//	go run ./examples/mcp npx -y @modelcontextprotocol/server-everything
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/calculator"
	"github.com/lodeworks/lode/x/tool/mcp"
)

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, args []string) error {
	if len(args) > 0 {
		return listStdio(ctx, w, args)
	}
	url, stop, err := serveCalculator(ctx)
	if err != nil {
		return err
	}
	defer stop()

	client, err := mcp.NewClient(mcp.WithName("remote"), mcp.WithHTTP(url))
	if err != nil {
		return err
	}
	defer client.Close()
	registry := tool.NewRegistry()
	if err := registry.Mount(ctx, client); err != nil {
		return err
	}
	for _, t := range registry.Tools() {
		fmt.Fprintln(w, "mounted:", t.Name)
	}

	prov := script.Play(
		script.Call("c1", "remote__calculator__eval", `{"expression":"2^10 / 3"}`),
		script.Text("2^10 / 3 is 1024/3."),
	)
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(registry)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(registry, nil)),
	)
	thread := ledger.NewThread()
	_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "What is 2^10 / 3?"})
	if _, err := step.Run(ctx, thread, prov); err != nil {
		return err
	}
	res := thread.Turns()[2].Artifacts[0].(artifact.ToolResult)
	fmt.Fprintf(w, "the MCP server answered: %s\n", res.Content)
	return nil
}

// serveCalculator serves the calculator pack over MCP at a loopback URL.
func serveCalculator(ctx context.Context) (string, func(), error) {
	served := tool.NewRegistry()
	if err := served.Mount(ctx, calculator.New()); err != nil {
		return "", nil, err
	}
	srv, err := mcp.NewServer(served)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "serve:", err)
		}
	}
	return "http://" + ln.Addr().String() + "/mcp", stop, nil
}

// listStdio mounts the server a command starts and lists its tools.
func listStdio(ctx context.Context, w io.Writer, command []string) error {
	client, err := mcp.NewClient(mcp.WithName("server"), mcp.WithStdio(command[0], command[1:]...))
	if err != nil {
		return err
	}
	defer client.Close()
	registry := tool.NewRegistry()
	if err := registry.Mount(ctx, client); err != nil {
		return err
	}
	for _, t := range registry.Tools() {
		fmt.Fprintf(w, "%-40s %s\n", t.Name, firstLine(t.Description))
	}
	return nil
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
