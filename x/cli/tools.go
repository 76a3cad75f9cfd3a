package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/tool/bash"
	"github.com/lodeworks/lode/x/tool/calculator"
	"github.com/lodeworks/lode/x/tool/filesystem"
	"github.com/lodeworks/lode/x/tool/local"
	"github.com/lodeworks/lode/x/tool/pack"
	"github.com/lodeworks/lode/x/tool/skills"
)

// builtins are the packs lode ships that are built from their options.
// Their tools are named "<pack>__<tool>", like a mounted source's.
var builtins = map[string]func(map[string]any) (pack.Pack, error){
	"calculator": func(o map[string]any) (pack.Pack, error) { return calculator.FromOptions(o) },
	"filesystem": func(o map[string]any) (pack.Pack, error) { return filesystem.FromOptions(o) },
	"bash":       func(o map[string]any) (pack.Pack, error) { return bash.FromOptions(o) },
	"skills":     func(o map[string]any) (pack.Pack, error) { return skills.FromOptions(o) },
}

// hasSkillDirs reports whether skills options name a directory to read:
// without one the pack would mount and offer nothing.
func hasSkillDirs(opts map[string]any) bool {
	if d, ok := opts["dir"]; ok && d != nil && d != "" {
		return true
	}
	switch d := opts["dirs"].(type) {
	case []any:
		return len(d) > 0
	case nil:
		return false
	default:
		return true // not a list: the pack's own check says so
	}
}

// naming explains the two styles of tool names that lode tools lists.
const naming = `Names: a pack or MCP server's tools appear as <source>__<tool> (calculator__eval,
everything__echo); a pack that names its own tools keeps them flat (local_query).`

// approvalNote says what "needs approval" in lode tools means at each door.
const approvalNote = `A tool marked "needs approval" (destructive, named by approve: in lode.yaml, or
by the policy's approve: rules for --role) never runs without a person's yes:
lode run pauses (exit 3) for lode resume; lode chat asks in the terminal; lode
web shows an approval card; lode serve asks the MCP client through elicitation
and refuses the call when the client cannot ask. An MCP server's tool without
annotations counts as destructive (MCP's defaults) unless the server's entry in
lode.yaml has read_only: true, or trust: names the tool.`

// toolbox is what a configuration mounts.
type toolbox struct {
	reg     tool.Registry
	router  *pack.Router
	closers []func() error
	// memory is lode.yaml's memory store (nil without memory:).
	memory memory.Store
}

func (t *toolbox) Close() error {
	var first error
	for _, c := range t.closers {
		if err := c(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// mountTools builds the registry a configuration describes: the packs of
// its tools: map, checked by the pack catalog's rules, and its MCP servers.
func mountTools(ctx context.Context, cfg *Config) (*toolbox, error) {
	catalog, err := pack.NewCatalog(local.New())
	if err != nil {
		return nil, err
	}
	settings := pack.Settings{}
	for _, pc := range cfg.Tools {
		at := cfg.file.at("tools." + pc.Name)
		build, ok := builtins[pc.Name]
		if !ok {
			if _, ok := catalog.Lookup(pc.Name); !ok {
				names := append(slices.Collect(maps.Keys(builtins)), catalog.Names()...)
				slices.Sort(names)
				names = slices.Compact(names)
				return nil, fmt.Errorf("%s: unknown pack %q in tools:; the packs are %s", at, pc.Name, strings.Join(names, ", "))
			}
			settings.Tools = append(settings.Tools, pc)
			continue
		}
		if pc.Name == "skills" && !hasSkillDirs(pc.Options) {
			return nil, fmt.Errorf("%s: tools.skills names no skill directories: give dir: PATH or dirs: [PATH, ...]", at)
		}
		opts := maps.Clone(pc.Options)
		if opts == nil {
			opts = map[string]any{}
		}
		if _, set := opts["tool_prefix"]; !set {
			opts["tool_prefix"] = pc.Name + tool.Separator
		}
		p, err := build(opts)
		if err != nil {
			hint := ""
			if errors.Is(err, fs.ErrNotExist) {
				hint = " (lode creates no directories: make it first)"
			}
			return nil, fmt.Errorf("%s: tools.%s: %s%s", at, pc.Name, strings.TrimPrefix(err.Error(), pc.Name+": "), hint)
		}
		if err := catalog.Register(p); err != nil {
			return nil, err
		}
		settings.Tools = append(settings.Tools, pack.PackConfig{Name: pc.Name, Options: opts})
	}
	reg := tool.NewRegistry()
	router, err := catalog.Mount(ctx, reg, settings)
	if err != nil {
		var oe *pack.OptionsError
		if errors.As(err, &oe) {
			return nil, fmt.Errorf("%s: %w", cfg.file.at("tools."+oe.Pack), err)
		}
		return nil, err
	}
	tb := &toolbox{reg: reg, router: router}
	if err := mountMemory(tb, cfg); err != nil {
		_ = tb.Close()
		return nil, err
	}
	if err := mountMCP(ctx, tb, cfg); err != nil {
		_ = tb.Close()
		return nil, err
	}
	if err := mountA2A(ctx, tb, cfg); err != nil {
		_ = tb.Close()
		return nil, err
	}
	return tb, nil
}

func cmdTools(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode tools", flag.ContinueOnError)
	var o options
	o.registerTools(fs)
	asJSON := fs.Bool("json", false, "print the tools as JSON (name, description, input schema, and why a call needs approval)")
	fs.StringVar(&o.role, "role", "", "with a policy in lode.yaml: say what needs approval for a caller holding these roles (comma-separated)")
	describe(fs, "lode tools [--config FILE] [--role R] [--json]", naming+"\n"+approvalNote)
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	if err := noArgs("lode tools", rest); err != nil {
		return err
	}
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	if _, err := prepareMCP(ctx, e, cfg); err != nil {
		return err
	}
	tb, err := mountTools(ctx, cfg)
	if err != nil {
		return err
	}
	defer tb.Close()
	d, err := openDoor(e, cfg, tb, doorSpec{kind: doorList, roles: o.role})
	if err != nil {
		return err
	}
	tools := tb.reg.Tools()
	if *asJSON {
		type out struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Approval    string          `json:"approval,omitempty"`
			Deferred    bool            `json:"deferred,omitempty"`
		}
		list := make([]out, len(tools))
		for i, t := range tools {
			why, _ := d.needsFor(o.role, t)
			list[i] = out{t.Name, t.Description, t.Schema, why, d.search != nil && d.search.Deferred(t.Name)}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, t := range tools {
		desc, _, _ := strings.Cut(t.Description, "\n")
		fmt.Fprintf(w, "%s\t%s\n", t.Name, desc)
		fmt.Fprintf(w, "\t  args: %s\n", t.Schema)
		if why, ask := d.needsFor(o.role, t); ask {
			fmt.Fprintf(w, "\t  needs approval: %s\n", why)
		}
		if d.search != nil && d.search.Deferred(t.Name) {
			fmt.Fprintf(w, "\t  deferred: offered once %s finds it (defer: in lode.yaml)\n", d.search.Tool().Name)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(tools) == 1 {
		fmt.Fprintln(e.stdout, "1 tool")
	} else {
		fmt.Fprintln(e.stdout, plural(len(tools), "tool"))
	}
	fmt.Fprintln(e.stdout, naming)
	return nil
}
