package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"strings"
	"text/tabwriter"

	"github.com/lodeworks/lode/tool"
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

// toolbox is what a configuration mounts.
type toolbox struct {
	reg     tool.Registry
	router  *pack.Router
	closers []func() error
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
		build, ok := builtins[pc.Name]
		if !ok {
			settings.Tools = append(settings.Tools, pc)
			continue
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
			return nil, fmt.Errorf("tools.%s: %s", pc.Name, strings.TrimPrefix(err.Error(), pc.Name+": "))
		}
		if err := catalog.Register(p); err != nil {
			return nil, err
		}
		settings.Tools = append(settings.Tools, pack.PackConfig{Name: pc.Name, Options: opts})
	}
	reg := tool.NewRegistry()
	router, err := catalog.Mount(ctx, reg, settings)
	if err != nil {
		return nil, err
	}
	tb := &toolbox{reg: reg, router: router}
	if err := mountMCP(ctx, tb, cfg.MCP); err != nil {
		_ = tb.Close()
		return nil, err
	}
	return tb, nil
}

func cmdTools(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode tools", flag.ContinueOnError)
	var o options
	o.registerTools(fs)
	asJSON := fs.Bool("json", false, "print the tools as JSON (name, description, input schema)")
	if err := parseFlags(fs, e, args); err != nil {
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
	tools := tb.reg.Tools()
	if *asJSON {
		type out struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		list := make([]out, len(tools))
		for i, t := range tools {
			list[i] = out{t.Name, t.Description, t.Schema}
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
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(tools) == 1 {
		fmt.Fprintln(e.stdout, "1 tool")
	} else {
		fmt.Fprintf(e.stdout, "%d tools\n", len(tools))
	}
	return nil
}
