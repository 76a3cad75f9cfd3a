package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/x/policy"
)

// policySource returns the policy lode.yaml names — policy_file:, or its
// own policy: section — followed for changes; nil when it names none.
// validate, when set, must accept every version before it takes effect.
func policySource(e env, cfg *Config, validate func(*policy.Policy) error) (*policy.File, error) {
	name := "lode.yaml"
	if cfg.file != nil {
		name = cfg.file.name
	}
	opts := []policy.FileOption{
		policy.WithLogger(slog.New(slog.NewTextHandler(e.stderr, nil))),
		policy.WithValidate(validate),
	}
	switch {
	case cfg.PolicyFile != "" && cfg.Policy != nil:
		return nil, fmt.Errorf("%s: policy: and policy_file: both given; choose one", cfg.file.at("policy_file"))
	case cfg.PolicyFile != "":
		path := cfg.PolicyFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(name), path)
		}
		return policy.Open(path, opts...)
	case cfg.Policy != nil:
		return policy.Open(name, append(opts, policy.WithKey("policy"))...)
	}
	return nil, nil
}

// checkAgainst refuses a policy whose rules name tools, packs or MCP
// servers the toolbox does not mount.
func checkAgainst(cfg *Config, tb *toolbox) func(*policy.Policy) error {
	servers := make([]string, len(cfg.MCP))
	for i, s := range cfg.MCP {
		servers[i] = s.Name
	}
	inv := policy.InventoryOf(tb.reg, ownersOf(tb), servers...)
	return func(p *policy.Policy) error { return p.Check(inv) }
}

// ownersOf tells the pack of each tool the toolbox's pack router serves.
func ownersOf(tb *toolbox) policy.Owners {
	if tb.router == nil {
		return nil
	}
	return tb.router
}

func (o *options) registerRole(fs *flag.FlagSet) {
	fs.StringVar(&o.role, "role", "", "with a policy in lode.yaml: the roles (comma-separated) the caller holds; lode web: of every caller when lode.yaml configures no logins (tokens:, proxy:)")
}

const policyUsage = `usage: lode policy check [--config FILE]
       lode policy explain [--config FILE] --role R[,R...] [TOOL]
       lode policy schema

check validates the policy (policy: in lode.yaml, or the file policy_file:
names) against its schema and against the tools the configuration mounts:
a rule that names no mounted tool, pack or MCP server is an error, with its
line. explain prints what the roles may use and the rule that decides each
tool, or, given TOOL, the rule that decides that one; "approval" marks a call
that waits for a person at every door — by the policy's approve: rules, by
approve: in lode.yaml, or because the tool is destructive. An allowed tool
that flows: rules cover is followed by what each rule does once the
conversation has taken in its labels ("after untrusted: approval by flow 1
(line 9)"), since what a model reads can narrow what it may do. schema prints the
document's JSON Schema, for editors.
`

func cmdPolicy(ctx context.Context, e env, args []string) error {
	if len(args) > 0 && args[0] == "schema" {
		if err := noArgs("lode policy schema", args[1:]); err != nil {
			return err
		}
		_, err := e.stdout.Write(policy.Schema())
		return err
	}
	if len(args) == 0 || (args[0] != "check" && args[0] != "explain") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(e.stdout, policyUsage)
			return nil
		}
		return usageError{"lode policy needs check, explain or schema\n" + policyUsage}
	}
	sub := args[0]
	fs := flag.NewFlagSet("lode policy "+sub, flag.ContinueOnError)
	var o options
	o.registerTools(fs)
	roles := ""
	if sub == "explain" {
		fs.StringVar(&roles, "role", "", "the roles to explain, comma-separated")
	}
	fs.Usage = func() { fmt.Fprint(fs.Output(), policyUsage) }
	rest, err := parseFlags(fs, e, args[1:])
	if err != nil {
		return err
	}
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	tb, err := mountTools(ctx, cfg)
	if err != nil {
		return err
	}
	defer tb.Close()
	servers := make([]string, len(cfg.MCP))
	for i, s := range cfg.MCP {
		servers[i] = s.Name
	}
	inv := policy.InventoryOf(tb.reg, ownersOf(tb), servers...)
	src, err := policySource(e, cfg, nil)
	if err != nil {
		return err
	}
	if src == nil {
		return errors.New("policy: lode.yaml has no policy: section and no policy_file:")
	}
	p := src.Policy()
	if sub == "check" {
		if err := noArgs("lode policy check", rest); err != nil {
			return err
		}
		if err := p.Check(inv); err != nil {
			var ce *policy.CheckError
			if errors.As(err, &ce) {
				for _, pr := range ce.Problems {
					fmt.Fprintf(e.stderr, "%s:%s\n", policyName(cfg), strings.TrimPrefix(pr.String(), "line "))
				}
				return fmt.Errorf("policy: %s %s nothing mounted", plural(len(ce.Problems), "rule"), agree(len(ce.Problems), "names", "name"))
			}
			return err
		}
		flows := ""
		if n := len(p.Flows()); n > 0 {
			flows = " and " + plural(n, "flow rule")
		}
		fmt.Fprintf(e.stdout, "policy ok: %s (%s)%s over %s\n", plural(len(p.Roles()), "role"), strings.Join(p.Roles(), ", "), flows, plural(len(inv.Tools), "tool"))
		return nil
	}
	held := policy.SplitRoles(roles)
	if len(held) == 0 {
		return usageError{"lode policy explain needs --role R"}
	}
	for _, r := range held {
		if _, ok := p.Document().Roles[r]; !ok {
			fmt.Fprintf(e.stdout, "role %s: not in the policy, so it allows nothing\n", r)
		}
	}
	// What the policy allows may still wait for a person: the doors add
	// destructive tools and approve: in lode.yaml, and so does explain.
	outside := approvalRule(cfg, tb, nil)
	withDoors := func(name string, d policy.Decision) policy.Decision {
		b, ok := tb.reg.Lookup(name)
		if !ok || !d.Allowed || d.NeedsApproval {
			return d
		}
		if reason, ask := outside(ctx, b.Tool, artifact.ToolCall{Name: name}); ask {
			d.NeedsApproval, d.ApprovalRule = true, reason
		}
		return d
	}
	switch len(rest) {
	case 0:
		w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		for _, en := range p.Explain(held, inv) {
			d := withDoors(en.Tool.Name, en.Decision)
			fmt.Fprintf(w, "%s\t%s\t%s%s\n", verdict(d), en.Tool.Name, why(d), flowsText(p, d, en.Tool))
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if l := p.Limits(held); l != (policy.Limits{}) {
			fmt.Fprintf(e.stdout, "limits: %s per answer, %s per run\n", limitText(l.CallsPerTurn), limitText(l.CallsPerRun))
		}
		return nil
	case 1:
		name := rest[0]
		var found *policy.Tool
		for i := range inv.Tools {
			if inv.Tools[i].Name == name {
				found = &inv.Tools[i]
			}
		}
		if found == nil {
			return fmt.Errorf("policy: no mounted tool is called %q (lode tools lists them)", name)
		}
		d := withDoors(name, p.Decide(held, *found))
		fmt.Fprintf(e.stdout, "%s %s: %s%s\n", name, verdict(d), why(d), flowsText(p, d, *found))
		return nil
	}
	return usageError{"lode policy explain takes at most one TOOL"}
}

func policyName(cfg *Config) string {
	name := "lode.yaml"
	if cfg.file != nil {
		name = cfg.file.name
	}
	if cfg.PolicyFile != "" {
		if filepath.IsAbs(cfg.PolicyFile) {
			return cfg.PolicyFile
		}
		return filepath.Join(filepath.Dir(name), cfg.PolicyFile)
	}
	return name
}

func verdict(d policy.Decision) string {
	switch {
	case d.Allowed && d.NeedsApproval:
		return "approval"
	case d.Allowed:
		return "allowed"
	}
	return "denied"
}

func why(d policy.Decision) string {
	if d.NeedsApproval {
		return d.Rule + "; approval: " + d.ApprovalRule
	}
	return d.Rule
}

// flowsText says which flow rules narrow an allowed tool, and after which
// labels: "; after untrusted: approval by flow 1 (line 9): reason".
// A denied tool stays denied whatever the flows say, so none is shown.
func flowsText(p *policy.Policy, d policy.Decision, t policy.Tool) string {
	if !d.Allowed {
		return ""
	}
	var sb strings.Builder
	for _, f := range p.FlowsOver(t) {
		labels := make([]string, len(f.After))
		for i, l := range f.After {
			labels[i] = string(l)
		}
		then := "approval"
		if f.Then == policy.FlowDeny {
			then = "denied"
		}
		fmt.Fprintf(&sb, "; after %s: %s by %s", strings.Join(labels, " or "), then, f.Rule())
		if f.Reason != "" {
			sb.WriteString(": " + f.Reason)
		}
	}
	return sb.String()
}

func limitText(n int) string {
	if n <= 0 {
		return "no limit"
	}
	return fmt.Sprint(n)
}
