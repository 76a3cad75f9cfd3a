package cli

import (
	"fmt"
	"slices"
	"strings"

	toolpkg "github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// deferSearch is lode.yaml's defer: the packs and MCP servers whose tools
// a loop's turns offer only once the model has found them with
// tool_search (x/tool/toolsearch), after base (the policy's filter, or nil)
// has said what the caller may use. It returns nil without defer:.
func deferSearch(cfg *Config, tb *toolbox, base xtool.ToolFilter) (*toolsearch.Search, error) {
	if len(cfg.Defer) == 0 {
		return nil, nil
	}
	var known []string
	if tb.router != nil {
		for _, p := range tb.router.Packs() { // the packs mounted, defaults among them
			known = append(known, p.Name())
		}
	}
	for _, pc := range cfg.Tools {
		if !slices.Contains(known, pc.Name) {
			known = append(known, pc.Name)
		}
	}
	for _, m := range cfg.MCP {
		known = append(known, m.Name)
	}
	for _, n := range cfg.Defer {
		if !slices.Contains(known, n) {
			where := "nothing"
			if len(known) > 0 {
				where = strings.Join(known, ", ")
			}
			return nil, fmt.Errorf("%s: defer: names %q, which is neither a pack of tools: nor a server of mcp:; they are %s", cfg.file.at("defer"), n, where)
		}
	}
	names := slices.Clone(cfg.Defer)
	opts := []toolsearch.Option{toolsearch.Defer(names...), toolsearch.WithBase(base)}
	if tb.router != nil {
		// Packs that name their own tools (local_*) are known by the router.
		opts = append(opts, toolsearch.DeferFunc(func(b *toolpkg.Binding) bool {
			p, ok := tb.router.Owner(b.Tool.Name)
			return ok && slices.Contains(names, p)
		}))
	}
	s, err := toolsearch.New(tb.reg, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: defer: %w", cfg.file.at("defer"), err)
	}
	return s, nil
}
