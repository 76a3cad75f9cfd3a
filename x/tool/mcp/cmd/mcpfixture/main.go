package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
	"github.com/lodeworks/lode/x/tool/mcp/internal/fixture"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpfixture:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: mcpfixture serve [-http ADDR] | mcpfixture client URL")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout)
	case "client":
		if len(args) < 2 {
			return errors.New("usage: mcpfixture client URL")
		}
		return client(ctx, args[len(args)-1], os.Getenv("MCP_CONFORMANCE_SCENARIO"), stdout)
	}
	return fmt.Errorf("unknown command %q; want serve or client", args[0])
}

func serve(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("http", "", "serve streamable HTTP on this address instead of stdio")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv, err := fixture.NewServer()
	if err != nil {
		return err
	}
	if *addr == "" {
		return srv.ServeStdio(ctx)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "listening on http://%s/mcp\n", ln.Addr())
	return srv.Serve(ctx, ln)
}

// client mounts the scenario's server in a registry and calls its tools
// through the tool handler, as an agent would.
func client(ctx context.Context, url, scenario string, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, err := mcp.NewClient(mcp.WithName("conformance"), mcp.WithHTTP(url), mcp.WithCallTimeout(10*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Connect(ctx); err != nil {
		return err
	}
	reg := tool.NewRegistry(tool.WithMCPServer(c))
	if err := reg.Err(); err != nil {
		return err
	}
	var names []string
	for _, t := range reg.Tools() {
		names = append(names, t.Name)
	}
	fmt.Fprintf(stdout, "scenario %q: tools %s\n", scenario, strings.Join(names, ", "))
	if _, ok := reg.Lookup("conformance__add_numbers"); ok {
		res := xtool.NewHandler(reg).Execute(ctx, artifact.ToolCall{ID: "1", Name: "conformance__add_numbers", Arguments: `{"a":5,"b":3}`})
		fmt.Fprintf(stdout, "add_numbers: %s\n", res.Content)
		if res.IsError {
			return fmt.Errorf("add_numbers failed: %s", res.Content)
		}
	}
	return c.Close()
}
