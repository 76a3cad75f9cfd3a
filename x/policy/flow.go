package policy

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/ledger"
)

// SendsOut is the calls: entry of a flow that covers every tool hinted
// SendsOut (tool.Hints): the calls that send data out of the process.
const SendsOut = "sends_out"

// The then: of a flow.
const (
	FlowApprove = "approve" // a person must approve the call
	FlowDeny    = "deny"    // the call is refused
)

// Flow is one flow rule: once the caller's thread has taken in any of
// After's labels (see ledger.Label), the calls it covers need a person's
// approval or are refused. Flows only narrow: a tool the roles refuse
// stays refused whatever the flows say.
type Flow struct {
	// After are labels (ledger.LabelUntrusted, ledger.LabelPrivate); any
	// one of them on the thread brings the rule in.
	After []ledger.Label `yaml:"after" json:"after"`
	// Calls name the tools the rule covers: SendsOut ("sends_out") for
	// every tool hinted SendsOut, or tool names, globs, and pack or MCP
	// server names, as in roles.
	Calls []Pattern `yaml:"calls" json:"calls"`
	// Then is FlowApprove or FlowDeny.
	Then string `yaml:"then" json:"then"`
	// Reason is shown to the model with a refusal and to the person asked
	// to approve; optional.
	Reason string `yaml:"reason" json:"reason,omitempty"`
	// Line is where the rule starts in YAML; 0 otherwise.
	Line int `yaml:"-" json:"-"`

	rule string // what FlowDecision.Rule says of it, set by Parse
}

// UnmarshalYAML keeps the line of the rule.
func (f *Flow) UnmarshalYAML(n *yaml.Node) error {
	type plain Flow
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*f = Flow(p)
	f.Line = n.Line
	return nil
}

// FlowDecision is what the flow rules decide for one call on a thread.
// The zero FlowDecision lets the call through.
type FlowDecision struct {
	// Deny refuses the call; NeedsApproval, when Deny is false, asks a
	// person first.
	Deny          bool
	NeedsApproval bool
	// Label is the label that brought the deciding rule in, and From the
	// tool that first brought the label to the thread.
	Label ledger.Label
	From  string
	// Rule names the deciding rule, e.g. "flow 2 (line 14)"; Reason is its
	// reason: text.
	Rule   string
	Reason string
}

// Why says, for the model and the person, why the call is refused or must
// be approved: which label, brought in by which tool, which rule.
func (d FlowDecision) Why() string {
	s := fmt.Sprintf("this conversation holds %s content, brought in by %s, and %s ", d.Label, d.From, d.Rule)
	if d.Deny {
		s += "refuses such calls after it"
	} else {
		s += "asks a person to approve such calls after it"
	}
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

// Flows returns the flow rules of p, in order.
func (p *Policy) Flows() []Flow {
	if p == nil {
		return nil
	}
	return p.doc.Flows
}

// DecideFlow decides t for a caller whose thread is st by the flow rules:
// a deny rule brought in by any of the thread's labels wins over an
// approve rule; of rules alike, the first written decides. A nil st (a
// caller with no thread) has taken in nothing.
func (p *Policy) DecideFlow(st ledger.State, t Tool) FlowDecision {
	if p == nil || len(p.doc.Flows) == 0 || st == nil {
		return FlowDecision{}
	}
	var d FlowDecision
	for _, f := range p.doc.Flows {
		if f.Then != FlowDeny && d.NeedsApproval {
			continue
		}
		if !f.covers(t) {
			continue
		}
		for _, l := range f.After {
			from, ok := ledger.HasLabel(st, l)
			if !ok {
				continue
			}
			d = FlowDecision{Label: l, From: from, Rule: f.rule, Reason: f.Reason}
			if f.Then == FlowDeny {
				d.Deny = true
				return d
			}
			d.NeedsApproval = true
			break
		}
	}
	return d
}

// FlowsOver returns the flow rules that cover t, whatever the labels: what
// explain shows.
func (p *Policy) FlowsOver(t Tool) []Flow {
	var out []Flow
	for _, f := range p.Flows() {
		if f.covers(t) {
			out = append(out, f)
		}
	}
	return out
}

// Rule names the flow as decisions do, e.g. "flow 2 (line 14)".
func (f Flow) Rule() string { return f.rule }

func (f Flow) covers(t Tool) bool {
	for _, c := range f.Calls {
		switch {
		case c.Text == SendsOut:
			if t.SendsOut {
				return true
			}
		case Match(c.Text, t.Name), t.Source != "" && Match(c.Text, t.Source):
			return true
		}
	}
	return false
}

// checkFlows validates the flows' values and names each rule.
func checkFlows(flows []Flow) error {
	var errs []string
	for i := range flows {
		f := &flows[i]
		at := fmt.Sprintf("flow %d", i+1)
		if f.Line > 0 {
			at += fmt.Sprintf(" (line %d)", f.Line)
		}
		f.rule = at
		if len(f.After) == 0 {
			errs = append(errs, at+": after: names no label; write untrusted or private")
		}
		for _, l := range f.After {
			if !slices.Contains(ledger.KnownLabels(), l) {
				errs = append(errs, fmt.Sprintf("%s: after: %q is not a label lode knows (private, untrusted)", at, l))
			}
		}
		if len(f.Calls) == 0 {
			errs = append(errs, at+": calls: names nothing; write sends_out, or tool, pack or MCP server names")
		}
		for _, c := range f.Calls {
			if !validPattern(c.Text) {
				errs = append(errs, fmt.Sprintf("%s: calls: %q is not a tool name or glob (letters, digits, _ - * ? only)", at, c.Text))
			}
		}
		if f.Then != FlowApprove && f.Then != FlowDeny {
			errs = append(errs, fmt.Sprintf("%s: then: %q is neither approve nor deny", at, f.Then))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
}
