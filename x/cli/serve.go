package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"

	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

func cmdServe(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode serve", flag.ContinueOnError)
	var o options
	o.registerTools(fs)
	o.registerTrace(fs)
	addr := fs.String("http", "", "serve streamable HTTP at POST /mcp on this loopback address (e.g. 127.0.0.1:8080) instead of stdio")
	roles := fs.String("role", "", "with a policy in lode.yaml: the roles (comma-separated) of the caller over stdio, or of every caller over HTTP when lode.yaml configures no logins (tokens:, proxy:)")
	var allowHosts []string
	allowHostFlag(fs, &allowHosts, "accept requests for this Host name besides loopback ones (repeatable; \"*\" for any); needed to serve --http on an address other than loopback")
	unauth := fs.Bool("allow-unauthenticated", false, "serve --http on an address other than loopback with no logins (tokens:, proxy: in lode.yaml), which opens the tools to the network")
	a2aAddr := fs.String("a2a", "", "serve lode.yaml's agent (model, tools, policy, approvals) over the Agent2Agent protocol on this loopback address instead of MCP (the lode of x/a2a/cmd/lode); tasks are kept where --store says")
	o.registerStore(fs)
	describe(fs, "lode serve [flags]", `A call that needs approval (a destructive tool, approve: in lode.yaml, the
policy's approve: rules for the caller's roles) is put to the MCP client's
person through elicitation and runs only on an accepted yes, once. A client
that declared no elicitation gets an error result (isError) saying the call
needs approval, why, and how to get it; the call never runs.

Over --http, tokens: and proxy: in lode.yaml are checked on every request
whenever they are configured: a request without credentials is answered
401 and runs nothing, and the caller's user, tenant and roles are those its
credentials name.

`+exitCodes)
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	if err := noArgs("lode serve", rest); err != nil {
		return err
	}
	if *a2aAddr != "" {
		if *addr != "" {
			return usageError{"--a2a and --http are two doors: run one lode serve for each"}
		}
		return serveA2A(ctx, e, &o, *a2aAddr, *roles, allowHosts, *unauth)
	}
	if o.store != "" {
		return usageError{"--store needs --a2a: lode serve over MCP keeps no threads"}
	}
	var remote bool
	if *addr != "" {
		var err error
		if remote, err = checkServeAddr(*addr, allowHosts); err != nil {
			return err
		}
	} else if len(allowHosts) > 0 {
		return usageError{"--allow-host needs --http"}
	}
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	tel, shutdown, err := setupTelemetry(ctx, e, o.trace)
	if err != nil {
		return err
	}
	defer shutdown(context.Background())
	notes, err := prepareMCP(ctx, e, cfg)
	if err != nil {
		return err
	}
	// stdout may carry the protocol: the mounted servers' notes go to stderr.
	notes.to(noteLines(e.stderr))
	tb, err := mountTools(ctx, cfg)
	if err != nil {
		return err
	}
	defer tb.Close()
	d, err := openDoor(e, cfg, tb, doorSpec{kind: doorServe, roles: *roles, http: *addr != ""})
	if err != nil {
		return err
	}
	if err := d.unauthenticated("--http", *addr, remote, *unauth); err != nil {
		return err
	}
	hopts, popts := d.handler, d.server
	telHandler, _ := tel.options()
	hopts = append(hopts, telHandler...)
	sopts := append([]mcp.ServerOption{mcp.WithHandler(xtool.NewHandler(tb.reg, hopts...)), mcp.WithImplementation("lode", "dev")}, popts...)
	if len(allowHosts) > 0 {
		sopts = append(sopts, mcp.WithAllowedHosts(allowHosts...))
	}
	srv, err := mcp.NewServer(tb.reg, sopts...)
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
		if remote && d.logins == nil {
			fmt.Fprintf(e.stderr, "lode serve: warning: %s is not a loopback address: anyone who can reach it can run these tools, unauthenticated\n", *addr)
		}
		fmt.Fprintf(e.stderr, "lode serve: %s at http://%s/mcp\n", plural(len(tb.reg.Tools()), "tool"), ln.Addr())
		err = srv.Serve(ctx, ln)
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// checkServeAddr accepts a loopback HOST:PORT, and another only when
// allowHosts is not empty; remote reports that it is not loopback. A host
// name other than localhost counts as not loopback: it is not resolved.
func checkServeAddr(addr string, allowHosts []string) (remote bool, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, usageError{fmt.Sprintf("--http %q: want HOST:PORT, e.g. 127.0.0.1:8080", addr)}
	}
	if strings.EqualFold(host, "localhost") {
		return false, nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return false, nil
	}
	if len(allowHosts) == 0 {
		return true, usageError{fmt.Sprintf("--http %s is not a loopback address: anyone who could reach it could run the tools, with no authentication; serve on 127.0.0.1:PORT, or add --allow-host NAME (the host name clients use, \"*\" for any) to serve there anyway", addr)}
	}
	return true, nil
}

var _ tool.RemoteSource = (*mcp.Client)(nil)

// allowHostFlag adds the repeatable --allow-host flag of serve and web,
// collecting its trimmed values into hosts.
func allowHostFlag(fs *flag.FlagSet, hosts *[]string, usage string) {
	fs.Func("allow-host", usage, func(v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("empty host name")
		}
		*hosts = append(*hosts, strings.TrimSpace(v))
		return nil
	})
}
