package policy

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

// ErrInvalid is what Parse and ParseNode return, wrapped, for a document
// that breaks the schema or holds a malformed pattern.
var ErrInvalid = errors.New("policy: invalid document")

// Document is a policy as written: roles by name.
type Document struct {
	Roles map[string]Role `yaml:"roles" json:"roles"`
	// Tenants bound each tenant's spending (the usd_ limits; the call
	// limits are the roles'), by the tenant the thread's metadata names
	// under TenantKey; AnyTenant ("*") binds each tenant without an entry.
	Tenants map[string]Limits `yaml:"tenants" json:"tenants,omitempty"`
	// Flows narrow what a caller may do once its thread has taken in
	// labels (ledger.Label): what a model reads can narrow what it may
	// do, never widen it. See Flow.
	Flows []Flow `yaml:"flows" json:"flows,omitempty"`
}

// Role is what the holders of one role may use.
type Role struct {
	// Allow lists what the role may use; nothing else is allowed.
	Allow Rules `yaml:"allow" json:"allow"`
	// Deny lists what the role may not use, whatever any role allows.
	Deny Rules `yaml:"deny" json:"deny"`
	// Approve lists allowed tools whose calls a person must approve first.
	Approve Rules `yaml:"approve" json:"approve"`
	// Limits bound the role's tool calls; zero means no limit.
	Limits Limits `yaml:"limits" json:"limits"`
}

// Rules name tools three ways.
type Rules struct {
	// Tools are registry names or globs over them (* any run, ? one
	// character).
	Tools []Pattern `yaml:"tools" json:"tools"`
	// Packs are the names of mounted packs: a rule covers all their tools.
	Packs []Pattern `yaml:"packs" json:"packs"`
	// MCP are the names of mounted MCP servers, as packs.
	MCP []Pattern `yaml:"mcp" json:"mcp"`
}

// Limits bound the tool calls of a role's holder. A call past a limit is
// refused with a result that says so, and the loop goes on.
type Limits struct {
	// CallsPerTurn bounds the calls of one assistant answer.
	CallsPerTurn int `yaml:"calls_per_turn" json:"calls_per_turn"`
	// CallsPerRun bounds the calls made since the last user message.
	CallsPerRun int `yaml:"calls_per_run" json:"calls_per_run"`
	// USDPerRun bounds what the model calls since the last user message
	// cost, in US dollars, and USDPerDay what they cost in a UTC day
	// (for a role: all its holders of one tenant together). Enforcer's
	// SpendLimit keeps them; see WithSpend.
	USDPerRun float64 `yaml:"usd_per_run" json:"usd_per_run,omitempty"`
	USDPerDay float64 `yaml:"usd_per_day" json:"usd_per_day,omitempty"`
}

// Pattern is one name or glob, with the line it was written on (0 when
// the document was not YAML).
type Pattern struct {
	Text string
	Line int

	rule string // what Decision.Rule says of it, set by Parse
}

// UnmarshalYAML keeps the line of the pattern.
func (p *Pattern) UnmarshalYAML(n *yaml.Node) error {
	if err := n.Decode(&p.Text); err != nil {
		return err
	}
	p.Line = n.Line
	return nil
}

// UnmarshalJSON reads a pattern from a JSON string.
func (p *Pattern) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &p.Text) }

// MarshalJSON writes the pattern as a JSON string.
func (p Pattern) MarshalJSON() ([]byte, error) { return json.Marshal(p.Text) }

// Tool is what a decision is about: a registry name and the source that
// owns it (a pack or MCP server name, or tool.LocalOwner).
type Tool struct {
	Name   string
	Source string
	// SendsOut is the tool's hint (tool.Hints), which the calls:
	// "sends_out" of a flow rule covers.
	SendsOut bool
}

// Decision is the policy's answer for one tool and one set of roles.
type Decision struct {
	// Allowed is true when some held role allows the tool and none denies it.
	Allowed bool
	// Rule is the rule that decided, e.g. `viewer deny tools "*_delete"
	// (line 9)`, or NoRule.
	Rule string
	// NeedsApproval is true when the tool is allowed and a held role lists
	// it under approve.
	NeedsApproval bool
	// ApprovalRule is the approve rule that asks, when NeedsApproval.
	ApprovalRule string
}

// NoRule is the Rule of a refusal that no rule made: nothing held allows
// the tool (the caller holds no role, only unknown roles, or roles that do
// not list it).
const NoRule = "no rule allows it"

// Policy is a parsed, checked document. It is immutable and safe for
// concurrent use.
type Policy struct {
	doc Document
}

//go:embed policy.schema.json
var schemaJSON []byte

var schema = func() *jsonschema.Resolved {
	var s jsonschema.Schema
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		panic(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		panic(err)
	}
	return r
}()

// Schema returns the JSON Schema of the document, for editors.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// Parse reads a policy document (YAML, or JSON, which is YAML).
func Parse(data []byte) (*Policy, error) {
	n, err := readDocument(data)
	if err != nil {
		return nil, err
	}
	if err := strict(n); err != nil {
		return nil, err
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return ParseNode(n.Content[0])
	}
	return ParseNode(n)
}

// ParseNode reads a policy document from a YAML node, such as the policy:
// section of lode.yaml, so that the lines it reports are the file's. It
// refuses duplicate keys, merge keys and explicit tags, as Parse does.
func ParseNode(n *yaml.Node) (*Policy, error) {
	if err := strict(n); err != nil {
		return nil, err
	}
	var raw any
	if err := n.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	// Through JSON, so that the validator sees JSON's types.
	js, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var inst any
	if err := json.Unmarshal(js, &inst); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := schema.Validate(inst); err != nil {
		return nil, fmt.Errorf("%w (line %d): %w; see policy.schema.json", ErrInvalid, n.Line, err)
	}
	var doc Document
	if err := n.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for _, name := range slices.Sorted(maps.Keys(doc.Roles)) {
		var errs []error
		r := doc.Roles[name]
		for _, set := range []Rules{r.Allow, r.Deny, r.Approve} {
			for _, p := range set.all() {
				if !validPattern(p.Text) {
					errs = append(errs, fmt.Errorf("%w: role %s, line %d: %q is not a tool name or glob (letters, digits, _ - * ? only)", ErrInvalid, name, p.Line, p.Text))
				}
			}
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		r.Allow.name(name, "allow")
		r.Deny.name(name, "deny")
		r.Approve.name(name, "approve")
	}
	if err := checkFlows(doc.Flows); err != nil {
		return nil, err
	}
	return &Policy{doc: doc}, nil
}

// Policy returns p, so that a fixed *Policy is a Source.
func (p *Policy) Policy() *Policy { return p }

// Document returns the document p was parsed from.
func (p *Policy) Document() Document { return p.doc }

// Roles returns the names of the roles p defines, sorted.
func (p *Policy) Roles() []string { return slices.Sorted(maps.Keys(p.doc.Roles)) }

func (r Rules) all() []Pattern {
	return slices.Concat(r.Tools, r.Packs, r.MCP)
}

// name writes, once, what each pattern of r will say as a Decision.Rule.
func (r Rules) name(role, kind string) {
	for i := range r.Tools {
		r.Tools[i].rule = describe(role, kind, "tools", r.Tools[i])
	}
	for i := range r.Packs {
		r.Packs[i].rule = describe(role, kind, "packs", r.Packs[i])
	}
	for i := range r.MCP {
		r.MCP[i].rule = describe(role, kind, "mcp", r.MCP[i])
	}
}

// match returns a description of the first rule of r that covers t.
func (r Rules) match(t Tool) (string, bool) {
	for _, p := range r.Tools {
		if Match(p.Text, t.Name) {
			return p.rule, true
		}
	}
	if t.Source == "" {
		return "", false
	}
	for _, p := range r.Packs {
		if Match(p.Text, t.Source) {
			return p.rule, true
		}
	}
	for _, p := range r.MCP {
		if Match(p.Text, t.Source) {
			return p.rule, true
		}
	}
	return "", false
}

func describe(role, kind, field string, p Pattern) string {
	s := fmt.Sprintf("%s %s %s %q", role, kind, field, p.Text)
	if p.Line > 0 {
		s += fmt.Sprintf(" (line %d)", p.Line)
	}
	return s
}

// Decide is the one decision every door asks. A caller may hold several
// roles: the allows are united, and any deny wins; roles p does not
// define count for nothing, so a caller with none gets nothing. An allowed
// tool needs approval when any held role lists it under approve.
func (p *Policy) Decide(roles []string, t Tool) Decision {
	if p == nil {
		return Decision{Rule: NoRule}
	}
	d := Decision{Rule: NoRule}
	for _, name := range roles {
		r, ok := p.doc.Roles[name]
		if !ok {
			continue
		}
		if rule, ok := r.Deny.match(t); ok {
			return Decision{Rule: rule}
		}
		if !d.Allowed {
			if rule, ok := r.Allow.match(t); ok {
				d.Allowed, d.Rule = true, rule
			}
		}
		if !d.NeedsApproval {
			if rule, ok := r.Approve.match(t); ok {
				d.NeedsApproval, d.ApprovalRule = true, rule
			}
		}
	}
	if !d.Allowed {
		return Decision{Rule: NoRule}
	}
	return d
}

// Limits returns the limits that bind a holder of roles: the strictest
// one any held role sets.
func (p *Policy) Limits(roles []string) Limits {
	var l Limits
	if p == nil {
		return l
	}
	for _, name := range roles {
		r, ok := p.doc.Roles[name]
		if !ok {
			continue
		}
		l.CallsPerTurn = strictest(l.CallsPerTurn, r.Limits.CallsPerTurn)
		l.CallsPerRun = strictest(l.CallsPerRun, r.Limits.CallsPerRun)
		l.USDPerRun = strictestUSD(l.USDPerRun, r.Limits.USDPerRun)
		l.USDPerDay = strictestUSD(l.USDPerDay, r.Limits.USDPerDay)
	}
	return l
}

func strictestUSD(a, b float64) float64 {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

func strictest(a, b int) int {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// validPattern accepts what can match a tool name: its characters and the
// two wildcards.
func validPattern(p string) bool {
	if p == "" || len(p) > 256 {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-*?", c) >= 0) {
			return false
		}
	}
	return true
}

// Match reports whether name matches the glob pattern: * matches any run
// of characters (none included), ? exactly one byte, anything else itself.
// It runs in O(len(pattern)·len(name)) at worst, whatever the input.
func Match(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]) && pattern[p] != '*':
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
