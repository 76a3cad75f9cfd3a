package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	toolpkg "github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	xtool "github.com/lodeworks/lode/x/tool"
)

// A2AServer serves lode.yaml's agent over the Agent2Agent protocol: lode
// serve --a2a ADDR hands it the agent. The root module's lode has none,
// as that module never requires the A2A SDK; x/a2a/cmd/lode passes one to
// Main with WithA2AServer.
type A2AServer interface {
	// ServeA2A serves a on ln until ctx ends. Tasks the last process over
	// a.Store left working are finished first.
	ServeA2A(ctx context.Context, ln net.Listener, a *A2AAgent) error
}

// A2AAgent is what lode.yaml and the flags configure, as an A2AServer
// needs it.
type A2AAgent struct {
	// Card is a2a_server: in lode.yaml: the card's name, description,
	// advertised URL and the push destinations.
	Card A2AServerConfig
	// Provider is the model, with lode.yaml's history policy.
	Provider provider.Provider
	// Store keeps each A2A context as a thread and each task's record.
	Store ledger.Store
	// Loop configures the loop.Step of every task's turns: the tool
	// handler with approvals, the policy's gate and filter, guards,
	// limits, tracing.
	Loop []loop.Option
	// Tools are the tools a turn may be offered, for the card's skills.
	Tools []toolpkg.Tool
	// Authenticator is tokens: and proxy: in lode.yaml; nil when it
	// configures none, and then every caller holds Roles (--role).
	Authenticator auth.Authenticator
	Roles         []string
	// AllowedHosts are --allow-host's: Host names accepted besides
	// loopback ones ("*" for any).
	AllowedHosts []string
	// Logger takes the server's reports (stderr).
	Logger *slog.Logger
}

// A2AServerConfig is the a2a_server: section of lode.yaml.
type A2AServerConfig struct {
	// Name and Description are the agent card's; empty means "lode" and
	// a generic description.
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// URL is where callers reach the server, as the card advertises it
	// (behind a proxy, the proxy's address); empty means the address
	// the card's request came to.
	URL string `yaml:"url"`
	// Push lists the URL prefixes push notifications may go to; none
	// turns push notifications off.
	Push []string `yaml:"push"`
}

// WithA2AServer gives lode serve s for --a2a.
func WithA2AServer(s A2AServer) Option { return func(e *env) { e.a2aServer = s } }

// noA2A is what a build without A2A says to --a2a.
const noA2A = "--a2a: this build of lode has no A2A server; install the one that has it: go install github.com/lodeworks/lode/x/a2a/cmd/lode@latest"

// defaultA2AThreads is where lode serve --a2a keeps contexts and tasks
// without --store or store: in lode.yaml: a task must outlive the process.
const defaultA2AThreads = ".lode/threads"

// serveA2A is lode serve --a2a ADDR: lode.yaml's agent, its model, tools,
// policy, approvals and guards, as an A2A server on addr.
func serveA2A(ctx context.Context, e env, o *options, addr, roles string, allowHosts []string, unauth bool) error {
	if e.a2aServer == nil {
		return usageError{noA2A}
	}
	remote, err := checkServeAddr(addr, allowHosts)
	if err != nil {
		return usageError{fmt.Sprintf("--a2a %s: %s", addr, err.Error())}
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
	prov, err := newModel(cfg, e, tel.tracer)
	if err != nil {
		return err
	}
	notes, err := prepareMCP(ctx, e, cfg)
	if err != nil {
		return err
	}
	notes.to(noteLines(e.stderr))
	tb, err := mountTools(ctx, cfg)
	if err != nil {
		return err
	}
	defer tb.Close()
	// A caller answers an approval later, on the task: the loop door
	// pauses for a decision; over HTTP, tokens: and proxy: are checked.
	d, err := openDoor(e, cfg, tb, doorSpec{kind: doorLoop, roles: roles, http: true, prov: prov, store: o.store, def: defaultA2AThreads})
	if err != nil {
		return err
	}
	if err := d.unauthenticated("--a2a", addr, remote, unauth); err != nil {
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
	a := &A2AAgent{Card: cfg.A2AServer, Provider: prov, Store: store, Loop: loopOpts, Tools: tb.reg.Tools(),
		AllowedHosts: allowHosts, Logger: slog.New(slog.NewTextHandler(e.stderr, nil))}
	if d.prov != nil {
		a.Provider = d.prov
	}
	if d.logins != nil {
		a.Authenticator = d.logins.authn
	} else {
		a.Roles = auth.SplitRoles(roles)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if remote && d.logins == nil {
		fmt.Fprintf(e.stderr, "lode serve: warning: %s is not a loopback address: any agent that can reach it can run these tools, unauthenticated\n", addr)
	}
	fmt.Fprintf(e.stderr, "lode serve: A2A agent with %s, tasks in %s, card at http://%s/.well-known/agent-card.json\n", plural(len(tb.reg.Tools()), "tool"), storeName(d.store), ln.Addr())
	ctx, stop := interruptible(ctx, e)
	defer stop()
	err = e.a2aServer.ServeA2A(ctx, ln, a)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
