package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"sort"

	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// mountMCP connects the configured MCP servers and mounts each under its
// name ("<name>__<tool>").
func mountMCP(ctx context.Context, tb *toolbox, servers []MCPServer) error {
	for _, s := range servers {
		opts := []mcp.Option{mcp.WithName(s.Name)}
		if s.URL != "" {
			opts = append(opts, mcp.WithHTTP(s.URL))
			keys := make([]string, 0, len(s.Headers))
			for k := range s.Headers {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				opts = append(opts, mcp.WithHeader(k, s.Headers[k]))
			}
		} else {
			opts = append(opts, mcp.WithStdio(s.Command[0], s.Command[1:]...))
			env := make([]string, 0, len(s.Env))
			for k, v := range s.Env {
				env = append(env, k+"="+v)
			}
			sort.Strings(env)
			if len(env) > 0 {
				opts = append(opts, mcp.WithEnv(env...))
			}
		}
		c, err := mcp.NewClient(opts...)
		if err != nil {
			return fmt.Errorf("mcp server %q: %w", s.Name, err)
		}
		tb.closers = append(tb.closers, c.Close)
		if err := tb.reg.Mount(ctx, c); err != nil {
			return fmt.Errorf("mcp server %q: %w", s.Name, err)
		}
	}
	return nil
}

func cmdServe(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode serve", flag.ContinueOnError)
	var o options
	o.register(fs)
	addr := fs.String("http", "", "serve streamable HTTP at POST /mcp on this loopback address (e.g. 127.0.0.1:8080) instead of stdio")
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	tracer, shutdown, err := setupTracing(ctx, e, o.trace)
	if err != nil {
		return err
	}
	defer shutdown(context.Background())
	tb, err := mountTools(ctx, cfg)
	if err != nil {
		return err
	}
	defer tb.Close()
	var hopts []xtool.HandlerOption
	if tracer != nil {
		hopts = append(hopts, xtool.WithTracer(tracer))
	}
	srv, err := mcp.NewServer(tb.reg, mcp.WithHandler(xtool.NewHandler(tb.reg, hopts...)), mcp.WithImplementation("lode", "dev"))
	if err != nil {
		return err
	}
	ctx, stop := interruptible(ctx, e)
	defer stop()
	if *addr == "" {
		err = srv.ServeStdio(ctx)
	} else {
		var ln net.Listener
		if ln, err = net.Listen("tcp", *addr); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "lode serve: %d tools at http://%s/mcp\n", len(tb.reg.Tools()), ln.Addr())
		err = srv.Serve(ctx, ln)
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

var _ tool.RemoteSource = (*mcp.Client)(nil)
