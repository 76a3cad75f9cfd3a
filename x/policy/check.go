package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	toolpkg "github.com/lodeworks/lode/tool"
)

// ErrUnknownName is what Check reports, wrapped in a *CheckError, for a
// rule that names a tool, pack or MCP server that is not mounted.
var ErrUnknownName = errors.New("policy: rule names nothing mounted")

// Inventory is what is mounted: the tools with their sources, and which
// sources are packs and which MCP servers.
type Inventory struct {
	Tools   []Tool
	Packs   []string
	Servers []string
}

// InventoryOf lists reg's tools, each with its pack when owners (which
// may be nil) know it; their sources are packs, except those
// named in servers (tools registered one by one have the source
// toolpkg.LocalOwner, a pack like any other here).
func InventoryOf(reg toolpkg.Registry, owners Owners, servers ...string) Inventory {
	inv := Inventory{Servers: slices.Clone(servers)}
	for _, t := range reg.Tools() {
		tt := toolOf(reg, owners, t.Name)
		inv.Tools = append(inv.Tools, tt)
		if tt.Source != "" && !slices.Contains(servers, tt.Source) && !slices.Contains(inv.Packs, tt.Source) {
			inv.Packs = append(inv.Packs, tt.Source)
		}
	}
	return inv
}

// Problem is one rule that names nothing mounted.
type Problem struct {
	Line    int
	Role    string
	Rule    string // "allow tools", "deny packs", ...; "calls" for a flow
	Pattern string
	// Flow is the 1-based number of the flow rule, 0 for a role's rule.
	Flow int
}

func (p Problem) String() string {
	if p.Flow > 0 {
		return fmt.Sprintf("line %d: flow %d, calls %q: no mounted tool, pack or MCP server matches", p.Line, p.Flow, p.Pattern)
	}
	kind := map[string]string{"tools": "tool", "packs": "pack", "mcp": "MCP server"}[p.Rule[strings.IndexByte(p.Rule, ' ')+1:]]
	return fmt.Sprintf("line %d: role %s, %s %q: no mounted %s matches", p.Line, p.Role, p.Rule, p.Pattern, kind)
}

// CheckError lists every rule that names nothing mounted, by line.
type CheckError struct {
	Problems []Problem
}

func (e *CheckError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return "policy: " + strings.Join(lines, "; ") + "; fix the names or mount what they name"
}

// Unwrap makes errors.Is(err, ErrUnknownName) hold.
func (e *CheckError) Unwrap() error { return ErrUnknownName }

// Check reports, as a *CheckError, every rule whose name or glob matches
// no mounted tool, pack or MCP server, flows' calls included (sends_out
// aside): a typo there would silently allow, deny or guard nothing.
func (p *Policy) Check(inv Inventory) error {
	var probs []Problem
	names := make([]string, len(inv.Tools))
	for i, t := range inv.Tools {
		names[i] = t.Name
	}
	for _, role := range p.Roles() {
		r := p.doc.Roles[role]
		for _, set := range []struct {
			kind  string
			rules Rules
		}{{"allow", r.Allow}, {"deny", r.Deny}, {"approve", r.Approve}} {
			for _, f := range []struct {
				field string
				pats  []Pattern
				among []string
			}{{"tools", set.rules.Tools, names}, {"packs", set.rules.Packs, inv.Packs}, {"mcp", set.rules.MCP, inv.Servers}} {
				for _, pat := range f.pats {
					if !slices.ContainsFunc(f.among, func(n string) bool { return Match(pat.Text, n) }) {
						probs = append(probs, Problem{Line: pat.Line, Role: role, Rule: set.kind + " " + f.field, Pattern: pat.Text})
					}
				}
			}
		}
	}
	for i, f := range p.doc.Flows {
		for _, c := range f.Calls {
			if c.Text == SendsOut {
				continue
			}
			match := func(n string) bool { return Match(c.Text, n) }
			if !slices.ContainsFunc(names, match) && !slices.ContainsFunc(inv.Packs, match) && !slices.ContainsFunc(inv.Servers, match) {
				probs = append(probs, Problem{Line: c.Line, Rule: "calls", Pattern: c.Text, Flow: i + 1})
			}
		}
	}
	if len(probs) == 0 {
		return nil
	}
	slices.SortStableFunc(probs, func(a, b Problem) int { return a.Line - b.Line })
	return &CheckError{Problems: probs}
}

// Entry is one tool and what the policy decides for it.
type Entry struct {
	Tool     Tool
	Decision Decision
}

// Explain decides every mounted tool for a holder of roles, in the
// inventory's order.
func (p *Policy) Explain(roles []string, inv Inventory) []Entry {
	out := make([]Entry, len(inv.Tools))
	for i, t := range inv.Tools {
		out[i] = Entry{Tool: t, Decision: p.Decide(roles, t)}
	}
	return out
}
