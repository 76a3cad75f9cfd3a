// Package policy makes role policy data: one document says which tools
// each role may use, and every door into the tools asks the same decision
// function, Decide, so that what a caller is shown and what it may run
// never disagree.
//
// A document maps roles to rules:
//
//	roles:
//	  viewer:
//	    allow:
//	      packs: [calculator]
//	      tools: ["local_read_*", "local_list_*"]
//	  editor:
//	    allow:
//	      packs: [calculator]
//	      tools: ["local_*"]
//	    deny:
//	      tools: [local_delete]
//	    approve:
//	      tools: ["local_write_*"]
//	    limits:
//	      calls_per_turn: 4
//	      calls_per_run: 20
//	  admin:
//	    allow:
//	      tools: ["*"]
//
// Tools are named as the registry names them, or by glob (* any run, ?
// one character); packs and mcp name mounted sources and cover all their
// tools. The rules, as Decide applies them:
//   - a role allows only what its allow lists; a role the document does
//     not define, and a caller with no role, get nothing;
//   - a caller may hold several roles: their allows are united, and a deny
//     of any held role wins over every allow;
//   - an allowed tool needs approval when any held role lists it under
//     approve (the Handler asks its Approver, see x/tool.WithApprover);
//   - limits bind the calls of one assistant answer and of one run (since
//     the last user message); with several roles the strictest applies.
//     They count inside the loop only: an MCP request is a single call.
//     A run's calls include those made below its calls, by an agent's
//     child at any depth (x/agent): each is charged to the caller's run
//     as it is made, and refused once the run has used calls_per_run, so
//     that a child is no way around the limit; the count is kept on the
//     caller's thread (xtool.MetaCallsBelowPrefix), so later answers and
//     resumes see it. calls_per_turn binds the caller's own answers only.
//
// The doors: Enforcer.Filter is the per-turn filter (xtool.WithFilteredTools)
// and the MCP server's filter (mcp.WithFilter), which serves tools/list and
// marks what tools/call may reach; Enforcer.HandlerOptions give the
// Handler its execution check (xtool.WithGate) and approval rule; the web
// handler runs the loop with both. A refused call reads exactly like a
// call to a tool that does not exist; the roles and the rule that decided
// go on the operator's execute_tool span only (AttrRoles, AttrRule).
//
// The caller's roles come from the thread's metadata under RolesKey
// ("role", comma-separated): the loop's thread, the state an MCP server's
// identity hook returns, the web handler's Identity.Role. Tokens is such a
// hook for static bearer tokens (Tokens.Identify fits mcp.WithIdentify);
// any other verifier (signed tokens, an identity provider) only has to
// produce the roles.
//
// # Spend limits
//
// limits: usd_per_run (since the last user message) and usd_per_day (a UTC
// day, per role of a tenant, and per tenant under tenants:) are kept by
// the Enforcer's SpendLimit, with WithSpend's prices and counters. It is a
// loop.Admitter: the loop asks it after every invoke option has shaped the
// request, so option order does not matter — before or after the tool
// filter, the history policy or the system prompt, it counts the whole
// request as it will be sent: system prompt, history as shortened, every
// tool offered (name, description, JSON schema), and MaxTokens at the
// output price (loop.EstimateInput, loop.Quote). A request a limit cannot
// pay for is refused unsent with a *SpendError naming the limit; otherwise
// its largest cost is reserved on the store's counters (ledger.Counter,
// each add checked against its limit in one step), MaxTokens lowered (or
// set, see loop.Quote.Cap) to what the limits can pay for, and the
// answer's usage settles the reservation, so concurrent runs and processes
// never pass a day together.
//
// # Flows
//
// What a model reads can narrow what it may do, never widen it. Tools say
// in their hints (tool.Hints) that their output is Untrusted (written by
// outside parties: a page, a mail, any MCP server's answer unless
// configured otherwise) or Private (the user's own data), and that their
// calls are SendsOut (they send data out of the process). Once a call to
// an Untrusted or Private tool has run, the x/tool Handler labels the
// caller's thread (ledger.AddLabel, before the result is shown); the
// labels are thread metadata, so they survive reload, compaction,
// resume, a copy of the thread and a Temporal worker, and a child agent
// starts with its caller's and brings its own back (x/agent). Flow rules
// sit beside roles:
//
//	flows:
//	  - after: [untrusted]        # any of these labels on the thread
//	    calls: [sends_out]        # tools hinted SendsOut; or tool names, globs, pack or MCP server names
//	    then: approve             # a person must approve the call
//	    reason: a page may carry instructions the user never gave
//	  - after: [private]
//	    calls: [sends_out]
//	    then: deny                # refused
//
// DecideFlow is the one decision, asked at every door as Decide is, and
// only after Decide allowed the tool, so a flow never allows what a role
// denies and a role's refusal still reads as an unknown tool. A deny flow
// hides the tool from the turn's offer (Filter, and so tools/list) and
// the Gate refuses a call to it with words the model and the person can
// act on — which label, brought in by which tool, which rule
// (FlowDecision.Why) — rather than an unknown tool's, since it is a limit
// they may act on (start a new conversation, ask the user). An approve
// flow makes the call wait through the approval rule (HandlerOptions),
// with the same words as its reason; a door that cannot ask a person
// refuses it. Of several rules, a deny wins over an approve. A call made
// by a child agent is decided by its caller's flows too: the Handler
// labels every thread above a call as it runs.
//
// Labels are coarse by design: once a page is in, every later call the
// rules cover is narrowed, whatever the model made of the page; calls
// of one answer are each decided on the labels the thread holds when
// they run (the answer was written before any of its results was read).
// Check reports a calls: entry that matches nothing mounted; Parse
// refuses an unknown label, an empty after: or calls:, and a then: other
// than approve or deny.
//
// Packs mounted together behind x/tool/pack's Router share one source;
// WithOwners(router) lets packs: rules name each pack.
//
// Reload: File follows a policy file (or the policy: key of lode.yaml, with
// WithKey). A change is seen by the next turn or MCP request, at most one
// stat per check interval; the new policy replaces the old atomically, and
// a file that does not parse (or fails WithValidate) is refused with a
// logged error while the old policy stays in force.
//
// The document's JSON Schema is policy.schema.json (Schema returns it);
// Check reports, with their lines, the rules that name nothing mounted.
// Parsing is loud about what YAML would otherwise pass over: a second
// document (in a policy file, or anywhere in lode.yaml), a key given twice
// (a second policy: key in lode.yaml too), a merge key and an explicit tag
// are each an ErrInvalid naming the line, so no rule is ever dropped
// silently.
package policy
