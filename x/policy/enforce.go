package policy

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	xtool "github.com/lodeworks/lode/x/tool"
)

// RolesKey is the thread metadata key that holds the caller's roles,
// comma-separated. It is the key x/conduit/web writes its Identity.Role
// under, so a web identity hook feeds the policy directly.
const RolesKey = auth.RolesKey

// Span attributes of a decision, on the operator's span only.
const (
	AttrRoles   = "lode.policy.roles"
	AttrRule    = "lode.policy.rule"
	AttrAllowed = "lode.policy.allowed"
	// AttrLabel is the flow label that brought in the deciding flow rule.
	AttrLabel = "lode.policy.label"
)

// Source yields the policy in force. *Policy is a fixed Source; *File
// reloads its file when it changes.
type Source interface {
	Policy() *Policy
}

// Roles returns the roles held by the caller whose thread is st: the
// comma-separated list under RolesKey. A nil st holds none.
func Roles(st ledger.State) []string {
	if st == nil {
		return nil
	}
	v, _ := st.Metadata(RolesKey)
	return SplitRoles(v)
}

// SplitRoles reads a comma-separated list of roles, dropping blanks.
func SplitRoles(v string) []string {
	var out []string
	for r := range strings.SplitSeq(v, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// Enforcer puts a policy in every door of one registry: the per-turn
// filter (Filter), the Handler's execution check and approvals
// (HandlerOptions), and so the MCP server (give it Filter and a Handler
// built with HandlerOptions) and the web handler (its loop options).
type Enforcer struct {
	reg    toolpkg.Registry
	src    Source
	owners Owners
	spend  *spender
}

// Owners tell which pack serves a tool, when several packs are mounted as
// one source (x/tool/pack's *Router does).
type Owners interface {
	Owner(tool string) (pack string, ok bool)
}

// EnforcerOption configures an Enforcer.
type EnforcerOption func(*Enforcer)

// WithOwners names, for the packs: rules, the pack of each tool that o
// knows; other tools keep the source the registry mounted them from. A
// nil o changes nothing.
func WithOwners(o Owners) EnforcerOption { return func(e *Enforcer) { e.owners = o } }

// NewEnforcer returns an Enforcer of src's policy over reg's tools. A nil
// src (or one that yields nil) allows nothing.
func NewEnforcer(reg toolpkg.Registry, src Source, opts ...EnforcerOption) *Enforcer {
	if reg == nil {
		reg = toolpkg.NewRegistry()
	}
	e := &Enforcer{reg: reg, src: src}
	for _, o := range opts {
		o(e)
	}
	return e
}

func (e *Enforcer) policy() *Policy {
	if e.src == nil {
		return nil
	}
	return e.src.Policy()
}

// Decide decides for the registered tool name; a name the registry does
// not hold is decided with no source.
func (e *Enforcer) Decide(roles []string, name string) Decision {
	return e.policy().Decide(roles, e.toolOf(name))
}

// DecideFlow decides the registered tool name by the flow rules, for the
// caller whose thread is st; see Policy.DecideFlow.
func (e *Enforcer) DecideFlow(st ledger.State, name string) FlowDecision {
	return e.policy().DecideFlow(st, e.toolOf(name))
}

func (e *Enforcer) toolOf(name string) Tool {
	return toolOf(e.reg, e.owners, name)
}

// toolOf names the source of a registered tool: its pack, when owners
// know it, else the source it was mounted from.
func toolOf(reg toolpkg.Registry, owners Owners, name string) Tool {
	t := Tool{Name: name}
	b, ok := reg.Lookup(name)
	if !ok {
		return t
	}
	t.Source, t.SendsOut = b.Source, b.Tool.Hints.SendsOut
	if owners != nil {
		if p, ok := owners.Owner(name); ok {
			t.Source = p
		}
	}
	return t
}

// Filter is the offer side: the tools a turn (or an MCP tools/list)
// shows are those the caller's roles are allowed. The policy is read
// once per call, so a reload takes effect on the next turn.
func (e *Enforcer) Filter() xtool.ToolFilter {
	return func(_ context.Context, st ledger.State, tools []toolpkg.Tool) []toolpkg.Tool {
		p, roles := e.policy(), Roles(st)
		out := make([]toolpkg.Tool, 0, len(tools))
		for _, t := range tools {
			tt := e.toolOf(t.Name)
			if p.Decide(roles, tt).Allowed && !p.DecideFlow(st, tt).Deny {
				out = append(out, t)
			}
		}
		return out
	}
}

// HandlerOptions are the execution side: a Gate that refuses what the
// policy does not allow (in the words of an unknown tool) and calls past
// a role's limits, and an approval rule for the tools a role must have
// approved (which matters with an xtool.WithApprover).
func (e *Enforcer) HandlerOptions() []xtool.HandlerOption {
	return []xtool.HandlerOption{xtool.WithGate(e.Gate), xtool.WithApprovalRule(e.approval)}
}

// Gate is the execution check, an xtool.Gate. Limits count only inside a
// loop turn: an MCP request is one call, with no turn or run around it.
//
// A call made below one of the caller's calls (by an agent's child, see
// xtool.CallsBelow) counts toward the caller's calls_per_run: it is
// refused once the caller's run, with every call made below it, has used
// the limit. What the child may use, and its own answers' calls_per_turn,
// are not the caller's: x/agent carries the caller's denials down.
func (e *Enforcer) Gate(ctx context.Context, st ledger.State, t toolpkg.Tool, source string, call artifact.ToolCall) xtool.Verdict {
	p, roles := e.policy(), Roles(st)
	if n, below := xtool.CallsBelow(ctx); below {
		return limitBelow(ctx, p, roles, st, t, source, call, n)
	}
	tt := Tool{Name: t.Name, Source: source, SendsOut: t.Hints.SendsOut}
	if e.owners != nil {
		if pk, ok := e.owners.Owner(t.Name); ok {
			tt.Source = pk
		}
	}
	d := p.Decide(roles, tt)
	v := xtool.Verdict{Attrs: []attribute.KeyValue{
		attribute.StringSlice(AttrRoles, roles),
		attribute.String(AttrRule, d.Rule),
		attribute.Bool(AttrAllowed, d.Allowed),
	}}
	if !d.Allowed {
		v.Hide = true
		return v
	}
	// Flows only narrow what the roles allowed, so they are asked after.
	if fd := p.DecideFlow(st, tt); fd.Deny {
		v.Refuse = fmt.Sprintf("the call to %s was refused: %s", t.Name, fd.Why())
		v.Withheld = true
		v.Attrs[1] = attribute.String(AttrRule, fd.Rule)
		v.Attrs = append(v.Attrs, attribute.String(AttrLabel, string(fd.Label)))
		return v
	}
	turn, ok := loop.CurrentTurn(ctx)
	if !ok {
		return v
	}
	lim := p.Limits(roles)
	if lim.CallsPerTurn <= 0 && lim.CallsPerRun <= 0 {
		return v
	}
	k := callPosition(ctx, turn.Answer, call)
	switch {
	case lim.CallsPerTurn > 0 && k > lim.CallsPerTurn:
		v.Refuse = fmt.Sprintf("the call to %s was refused: your role allows %d tool calls per answer and this is call %d; use the results you have", t.Name, lim.CallsPerTurn, k)
	case lim.CallsPerRun > 0 && earlierCalls(st)+k > lim.CallsPerRun:
		v.Refuse = fmt.Sprintf("the call to %s was refused: your role allows %d tool calls per request and they are used up; answer with what you have", t.Name, lim.CallsPerRun)
	}
	if v.Refuse != "" {
		v.Attrs[1] = attribute.String(AttrRule, "limits")
	}
	return v
}

// limitBelow is the Gate for a call made below the caller's call being
// handled in ctx, the n-th made below it.
func limitBelow(ctx context.Context, p *Policy, roles []string, st ledger.State, t toolpkg.Tool, source string, call artifact.ToolCall, n int) xtool.Verdict {
	// What the child read has reached the caller's thread (x/tool labels
	// every thread above a call), so the caller's flows bind the child.
	if fd := p.DecideFlow(st, Tool{Name: t.Name, Source: source, SendsOut: t.Hints.SendsOut}); fd.Deny {
		return xtool.Verdict{
			Refuse: fmt.Sprintf("the call to %s was refused: %s", t.Name, fd.Why()),
			Attrs:  []attribute.KeyValue{attribute.StringSlice(AttrRoles, roles), attribute.String(AttrRule, fd.Rule), attribute.String(AttrLabel, string(fd.Label))},
		}
	}
	turn, ok := loop.CurrentTurn(ctx)
	if !ok {
		return xtool.Verdict{}
	}
	lim := p.Limits(roles)
	if lim.CallsPerRun <= 0 || earlierCalls(st)+callPosition(ctx, turn.Answer, call)+n <= lim.CallsPerRun {
		return xtool.Verdict{}
	}
	return xtool.Verdict{
		Refuse: fmt.Sprintf("the call to %s was refused: the caller that started you allows %d tool calls per request, counting those of the agents it calls, and they are used up; answer with what you have", t.Name, lim.CallsPerRun),
		Attrs:  []attribute.KeyValue{attribute.StringSlice(AttrRoles, roles), attribute.String(AttrRule, "limits")},
	}
}

// callPosition is the 1-based position of call among the tool calls of
// the answer being handled.
func callPosition(ctx context.Context, answer []artifact.Artifact, call artifact.ToolCall) int {
	at, indexed := loop.ArtifactIndex(ctx)
	k := 0
	for i, a := range answer {
		c, ok := a.(artifact.ToolCall)
		if !ok {
			continue
		}
		k++
		if indexed && i == at || !indexed && c.ID == call.ID {
			return k
		}
	}
	return k
}

// earlierCalls counts the tool calls of the assistant answers since the
// last user message, the answer being handled (the latest) left out, each
// with the calls made below it (xtool.MetaCallsBelowPrefix). It walks
// back from the end, so its cost is the run's, not the thread's.
func earlierCalls(st ledger.State) int {
	if st == nil {
		return 0
	}
	turns := st.Turns()
	n, skipped := 0, false
	for i := len(turns) - 1; i >= 0; i-- {
		switch turns[i].Role {
		case ledger.RoleUser:
			return n
		case ledger.RoleAssistant:
			if !skipped {
				skipped = true
				continue
			}
			for _, a := range turns[i].Artifacts {
				if c, ok := a.(artifact.ToolCall); ok {
					n += 1 + xtool.RecordedBelow(st, c.ID)
				}
			}
		}
	}
	return n
}

func (e *Enforcer) approval(ctx context.Context, t toolpkg.Tool, _ artifact.ToolCall) (string, bool) {
	st, _ := xtool.Caller(ctx)
	p, tt := e.policy(), e.toolOf(t.Name)
	if d := p.Decide(Roles(st), tt); d.NeedsApproval {
		return "policy: " + d.ApprovalRule, true
	}
	if fd := p.DecideFlow(st, tt); fd.NeedsApproval || fd.Deny {
		return "policy: " + fd.Why(), true
	}
	return "", false
}
