package cli

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	toolpkg "github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/catalog"
	"github.com/lodeworks/lode/x/conduit/web"
	"github.com/lodeworks/lode/x/history"
	"github.com/lodeworks/lode/x/policy"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// doorKind names a door into the tools. Every door gets the same rule
// book from openDoor; the kind decides only how a call that needs approval
// is asked about.
type doorKind int

const (
	// doorLoop: lode run, chat and resume. A call that needs approval
	// pauses the run (xtool.PauseForDecision); chat then asks in the terminal, run
	// prints the lode resume commands.
	doorLoop doorKind = iota
	// doorWeb: lode web pauses as run does; the page shows the pending
	// call as an approval card and posts the decision.
	doorWeb
	// doorServe: lode serve asks the MCP client's person through
	// elicitation, and fails closed when the client cannot ask.
	doorServe
	// doorList: lode tools, which runs nothing and only says what would
	// need approval.
	doorList
)

// serveHint is what lode serve tells a caller whose client cannot ask a
// person about a call that needs approval.
const serveHint = "use an MCP client that supports elicitation, run it through lode run or lode chat, or change approve: (or the policy's approve: rules, or a mounted MCP server's read_only: and trust:) in lode.yaml"

// doorSpec is what a command knows beyond the configuration.
type doorSpec struct {
	kind doorKind
	// roles is --role: the caller's roles; over HTTP, every caller's, and
	// only when lode.yaml configures no logins (tokens:, proxy:).
	roles string
	// http says the door is served over HTTP, where tokens: and proxy:
	// apply (lode web always is).
	http bool
	// prov, when set, is the model the door's loop talks to: openDoor
	// wraps it in lode.yaml's history: policy.
	prov provider.Provider
	// store is --store (or lode web's --threads) when given; def is the
	// folder used when neither it nor store: in lode.yaml names one.
	store, def string
}

// door is what one door into the tools takes from the configuration: the
// approval rule, the policy's filter and execution check, the history
// policy and the store. Every command builds it with openDoor, so every
// door keeps the same rules.
type door struct {
	// needs says whether a call needs a person's approval, and why:
	// destructive tools, what approve: in lode.yaml names, and the
	// policy's approve: rules for the caller's roles.
	needs xtool.ApprovalRule
	// filter offers each turn (or tools/list) what the caller's roles
	// allow; nil without a policy, which offers everything.
	filter xtool.ToolFilter
	// handler configures the Handler: the approval rule with the door's
	// approver, and the policy's Gate.
	handler []xtool.HandlerOption
	// roles, with a policy, are what the door's loop threads hold.
	roles *string
	// history is lode.yaml's history: policy (nil without one); prov is
	// spec.prov wrapped to retry a request the server finds too long.
	history *history.Policy
	prov    provider.Provider
	// store is the ledger's spec (x/store: a folder, sqlite:PATH or a
	// postgres:// URL): the command's flag, else store: in lode.yaml, else
	// spec.def ("" keeps threads in memory).
	store string
	// spend counts the policy's usd_per_day spending in that store; nil
	// without a policy or a store. The command closes it.
	spend *spendCounter
	// server and web are the options of lode serve's MCP server and lode
	// web's handler: who the caller is, and for serve the filter.
	server []mcp.ServerOption
	web    []web.Option
	enf    *policy.Enforcer
	// catalog is lode's model catalog with lode.yaml's catalog: over it;
	// loop prices the door's turns with it and keeps max_cost.
	catalog *catalog.Catalog
	loop    []loop.Option
	// extract is memory.extract's handler as a loop option, for a door's
	// own loop, and answer the handler itself, for a Temporal worker,
	// whose turns run without handlers.
	extract []loop.Option
	answer  []loop.Handler
	// search is lode.yaml's defer: (nil without it); a loop's turns
	// offer through its Filter, over filter.
	search *toolsearch.Search
	// logins are the credentials an HTTP door checks on every request,
	// with or without a policy; nil when lode.yaml configures none.
	logins *logins
}

// openDoor builds what a door needs from cfg and the mounted tools.
func openDoor(e env, cfg *Config, tb *toolbox, spec doorSpec) (*door, error) {
	d := &door{store: spec.store, catalog: catalogOf(cfg)}
	d.loop = costOptions(cfg, d.catalog)
	guards, err := guardsOf(e, cfg)
	if err != nil {
		return nil, err
	}
	if len(guards) > 0 {
		d.loop = append(d.loop, loop.WithGuards(guards...), loop.WithOutputWindow(cfg.Guards.OutputWindow))
	}
	content, err := captureOf(e, cfg)
	if err != nil {
		return nil, err
	}
	if content.On {
		d.loop = append(d.loop, loop.WithCapture(content))
	}
	if err := checkStore(spec.store, cfg); err != nil {
		return nil, err
	}
	if d.store == "" {
		d.store = cfg.Store
	}
	if d.store == "" {
		d.store = spec.def
	}
	if spec.kind != doorServe { // an MCP client lists and picks tools itself
		// Registered before the policy is checked, which may name
		// tool_search; the policy's filter, made below, is its base.
		base := func(ctx context.Context, st ledger.State, tools []toolpkg.Tool) []toolpkg.Tool {
			if d.filter == nil {
				return tools
			}
			return d.filter(ctx, st, tools)
		}
		if d.search, err = deferSearch(cfg, tb, base); err != nil {
			return nil, err
		}
	}
	src, err := policySource(e, cfg, checkAgainst(cfg, tb))
	if err != nil {
		return nil, err
	}
	if src == nil && spec.roles != "" {
		return nil, usageError{"--role needs a policy: in lode.yaml (or policy_file:)"}
	}
	// The day's spending and the sessions' revocations are counted in
	// the store, which every process sharing it sees.
	var counter ledger.Counter
	if d.spend = counterOf(d.store); d.spend != nil {
		counter = d.spend
	}
	if spec.http || spec.kind == doorWeb {
		// Checked whatever else is configured: a door's safety does not
		// hang on an unrelated setting such as policy:.
		if d.logins, err = loginsOf(e, cfg, spec.kind == doorWeb, counter); err != nil {
			return nil, err
		}
		if d.logins != nil && spec.roles != "" {
			return nil, usageError{fmt.Sprintf("--role gives the roles of callers of a door with no logins; lode.yaml has %s, which give each caller's: leave --role out", d.logins.what())}
		}
	}
	if src != nil {
		d.enf = policy.NewEnforcer(tb.reg, src, policy.WithOwners(ownersOf(tb)),
			policy.WithSpend(counter, d.catalog, cfg.Model.Name))
		// The loop admits each request once every invoke option has
		// shaped it, so the limit counts the tools and history the
		// door's options add after this.
		d.loop = append(d.loop, loop.WithAdmitters(d.enf.SpendLimit()))
		d.filter = d.enf.Filter()
		roles := spec.roles
		d.roles = &roles
	}
	d.identities(spec)
	d.server = append(d.server, memoryServe(d, tb, spec)...)
	if d.enf != nil && spec.roles == "" && d.logins == nil {
		// Only stderr: lode serve's stdout carries the protocol.
		switch spec.kind {
		case doorLoop:
			fmt.Fprintln(e.stderr, noRoleWarning(noRoleModel))
		case doorServe:
			fmt.Fprintln(e.stderr, noRoleWarning(noRoleClients))
		}
	}
	d.needs = approvalRule(cfg, tb, d.enf)
	var approver xtool.Approver = xtool.PauseForDecision
	if spec.kind == doorServe {
		approver = mcp.AskClient(mcp.WithAskReason(d.needs), mcp.WithAskHint(serveHint))
	}
	d.handler = []xtool.HandlerOption{xtool.WithApprover(approver), xtool.WithApprovalRule(d.needs)}
	if d.enf != nil {
		d.handler = append(d.handler, xtool.WithGate(d.enf.Gate))
	}
	if spec.kind == doorServe && len(guards) > 0 {
		// An MCP client's calls run outside a loop: the handler asks
		// the call and result guards itself.
		d.handler = append(d.handler, xtool.WithGuards(guards...))
	}
	if content.On {
		// lode serve's calls, which no loop runs, take it from the handler.
		d.handler = append(d.handler, xtool.WithCapture(content))
	}
	if spec.prov != nil {
		if d.history, d.prov, err = historyPolicy(cfg, spec.prov, d.catalog); err != nil {
			return nil, err
		}
		if h := memoryExtractor(cfg, tb, d, spec.prov); h != nil {
			d.answer = []loop.Handler{h}
			d.extract = []loop.Option{loop.WithHandlers(h)}
		}
	}
	return d, nil
}

// identities says who the caller of a served door is: over HTTP, with
// logins configured, who the request's credentials name (a request
// without them is refused before anything runs); otherwise the roles of
// --role.
func (d *door) identities(spec doorSpec) {
	switch spec.kind {
	case doorServe:
		if d.filter != nil {
			d.server = append(d.server, mcp.WithFilter(d.filter))
		}
		switch {
		case spec.http && d.logins != nil:
			d.server = append(d.server, mcp.WithIdentify(d.logins.identify))
		case d.enf != nil:
			d.server = append(d.server, mcp.WithState(ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: spec.roles}))))
		}
	case doorWeb:
		switch {
		case d.logins != nil:
			d.web = append(d.web, web.WithAuthenticator(d.logins.authn))
			if d.logins.sessions != nil {
				d.web = append(d.web, web.WithSessions(d.logins.sessions))
			}
		case spec.roles != "":
			identify := func(*http.Request) (web.Identity, error) { return web.Identity{Role: spec.roles}, nil }
			d.web = append(d.web, web.WithIdentify(identify))
		}
	}
}

// unauthenticated refuses a door that would serve a non-loopback address
// with no logins, unless the command was told so (--allow-unauthenticated).
func (d *door) unauthenticated(flag, addr string, remote, allowed bool) error {
	if !remote || d.logins != nil || allowed {
		return nil
	}
	return usageError{fmt.Sprintf("%s %s is not a loopback address and lode.yaml configures no logins (tokens:, proxy:): anyone who reaches it could use the tools; add tokens: or proxy:, or --allow-unauthenticated to serve it with no authentication", flag, addr)}
}

// approvalRule is the one rule that says which calls wait for a person:
// calls to destructive tools, to the tools, packs and MCP servers that
// approve: in lode.yaml names, and those the policy's approve: rules name
// for the caller's roles (read from the call's state, xtool.Caller).
func approvalRule(cfg *Config, tb *toolbox, enf *policy.Enforcer) xtool.ApprovalRule {
	names := slices.Clone(cfg.Approve)
	return func(ctx context.Context, t toolpkg.Tool, _ artifact.ToolCall) (string, bool) {
		if t.Hints.Destructive {
			return "the tool is marked destructive", true
		}
		source := ""
		if b, ok := tb.reg.Lookup(t.Name); ok && b.Source != toolpkg.LocalOwner {
			source = b.Source
		}
		if tb.router != nil {
			if p, ok := tb.router.Owner(t.Name); ok {
				source = p
			}
		}
		for _, n := range names {
			// lode mounts a pack's and a server's tools as NAME__tool.
			if t.Name == n || n == source || strings.HasPrefix(t.Name, n+toolpkg.Separator) {
				return fmt.Sprintf("approve: in lode.yaml names %s", n), true
			}
		}
		if enf != nil {
			st, _ := xtool.Caller(ctx)
			if dec := enf.Decide(policy.Roles(st), t.Name); dec.NeedsApproval {
				return "policy: " + dec.ApprovalRule, true
			}
			// What the thread has taken in may ask for a person too.
			if fd := enf.DecideFlow(st, t.Name); fd.NeedsApproval || fd.Deny {
				return "policy: " + fd.Why(), true
			}
		}
		return "", false
	}
}

// needsFor says whether a call to t needs approval for a caller holding
// roles, as the door's Handler would decide it (lode tools).
func (d *door) needsFor(roles string, t toolpkg.Tool) (string, bool) {
	ctx := xtool.WithCaller(context.Background(), ledger.NewThread(ledger.WithMetadata(map[string]string{policy.RolesKey: roles})))
	return d.needs(ctx, t, artifact.ToolCall{Name: t.Name})
}

// invoke is the door's per-turn options for a loop: the history policy,
// the offered tools, the system prompt.
func (d *door) invoke(cfg *Config, tb *toolbox) []provider.InvokeOption {
	var opts []provider.InvokeOption
	if d.history != nil {
		opts = append(opts, d.history)
	}
	opts = append(opts, memoryInvoke(cfg, tb)...)
	filter := d.filter
	if d.search != nil {
		filter = d.search.Filter()
	}
	opts = append(opts, xtool.WithFilteredTools(tb.reg, filter))
	opts = append(opts, responsesInvoke(cfg)...)
	if cfg.System != "" {
		opts = append(opts, provider.WithSystemPrompt(cfg.System))
	}
	return opts
}
