package cli

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/x/conduit/web"
	xtool "github.com/lodeworks/lode/x/tool"
)

// defaultWebAddr is where `lode web` listens without --addr.
const defaultWebAddr = "127.0.0.1:7480"

// defaultThreadsDir is where `lode web` keeps threads without --store or
// store: in lode.yaml.
const defaultThreadsDir = ".lode/threads"

// cmdWeb serves the chat page and the UI message stream for the configured
// model and packs, threads kept in a file store.
func cmdWeb(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode web", flag.ContinueOnError)
	var o options
	o.register(fs)
	// lode web always keeps its threads: the page lists them and a paused
	// turn waits in them.
	fs.Lookup("store").Usage = "where the conversations are kept: " + storeForms + " (default: store in lode.yaml, else " + defaultThreadsDir + ")"
	addr := fs.String("addr", defaultWebAddr, "listen on this loopback HOST:PORT")
	// --threads is --store's old name, kept working (and out of -h) for
	// the scripts that use it.
	threads := fs.String("threads", "", "deprecated: the same as --store")
	var allowHosts []string
	allowHostFlag(fs, &allowHosts, "accept requests for this Host name besides loopback ones (repeatable; \"*\" for any); needed to listen on an address other than loopback")
	unauth := fs.Bool("allow-unauthenticated", false, "serve an address other than loopback with no logins (tokens:, proxy: in lode.yaml), which lets anyone who reaches it chat and run the tools")
	describe(fs, "lode web [flags]", `A call that needs approval pauses the chat; the page shows it as an approval
card (after a reload, and in another browser, too) and posts the decision.
Each answer shows the tokens it used and their cost at the catalog's prices
(catalog: in lode.yaml gives a model's), the thread's total in the header.
Callers' identity (user, tenant, roles), for the policy, its approve: rules
and its tenants: limits, comes from tokens: (a bearer token, or the page's
login, which trades it for a session cookie; sessions: sets it) or from a
trusted proxy's headers (proxy:), checked on every request whenever they
are configured; with neither, every caller holds --role. history: in
lode.yaml applies to every request. Threads are kept where --store says
(`+storeForms+`), else where store: in lode.yaml says, else in
`+defaultThreadsDir+` (--threads, the flag's old name, still works).
Several lode web processes may serve one store (one PostgreSQL database):
a turn holds its thread's lease (lease: in lode.yaml, 30s by default), so
the others refuse a message on it with 409 until it ends, or until the
lease of a process that died lapses.

`+exitCodes, "threads")
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	if err := noArgs("lode web", rest); err != nil {
		return err
	}
	if *threads != "" {
		if o.store != "" && o.store != *threads {
			return usageError{fmt.Sprintf("--threads %s and --store %s name two stores: give only --store (--threads is its old name)", *threads, o.store)}
		}
		o.store = *threads
		fmt.Fprintln(e.stderr, "lode web: warning: --threads is deprecated: use --store, which means the same")
	}
	remote, err := checkServeAddr(*addr, allowHosts)
	if err != nil {
		return usageError{strings.Replace(err.Error(), "--http", "--addr", 1)}
	}
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	tel, shutdown, err := setupTelemetry(ctx, e, o.trace)
	if err != nil {
		return err
	}
	tracer := tel.tracer
	defer shutdown(context.Background())
	prov, err := newModel(cfg, e, tracer)
	if err != nil {
		return err
	}
	// Logins only: x/conduit/web has no part for a mounted server's
	// progress or logs, so they are dropped.
	if _, err := prepareMCP(ctx, e, cfg); err != nil {
		return err
	}
	tb, err := mountTools(ctx, cfg)
	if err != nil {
		return err
	}
	defer tb.Close()
	// --store given wins over store: in lode.yaml, which wins over the
	// default folder.
	d, err := openDoor(e, cfg, tb, doorSpec{kind: doorWeb, roles: o.role, prov: prov, store: o.store, def: defaultThreadsDir})
	if err != nil {
		return err
	}
	if err := d.unauthenticated("--addr", *addr, remote, *unauth); err != nil {
		return err
	}
	defer d.spend.Close()
	store, err := openStore(ctx, d.store)
	if err != nil {
		return err
	}
	defer store.Close()

	hopts := d.handler
	loopOpts := []loop.Option{loop.WithMaxTurns(cfg.MaxTurns), loop.WithTimeLimit(time.Duration(cfg.Model.Timeout))}
	loopOpts = append(loopOpts, d.loop...)
	loopOpts = append(loopOpts, d.extract...)
	telHandler, telLoop := tel.options()
	hopts = append(hopts, telHandler...)
	loopOpts = append(loopOpts, telLoop...)
	loopOpts = append(loopOpts, loop.WithHandlers(xtool.NewHandler(tb.reg, hopts...)), loop.WithInvokeOptions(d.invoke(cfg, tb)...))
	wopts := append(d.web, web.WithLoopOptions(loopOpts...), web.WithLease(time.Duration(cfg.Lease)))
	if len(allowHosts) > 0 {
		wopts = append(wopts, web.WithAllowedHosts(allowHosts...))
	}
	var sendTo provider.Provider = prov
	if d.prov != nil {
		sendTo = d.prov
	}
	h, err := web.New(sendTo, store, wopts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if remote && d.logins == nil {
		fmt.Fprintf(e.stderr, "lode web: warning: %s is not a loopback address: anyone who can reach it can chat and run these tools, unauthenticated\n", *addr)
	}
	fmt.Fprintf(e.stderr, "lode web: %s, threads in %s, chat at http://%s/\n", plural(len(tb.reg.Tools()), "tool"), storeName(d.store), ln.Addr())
	ctx, stop := interruptible(ctx, e)
	defer stop()
	err = h.Serve(ctx, ln)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
