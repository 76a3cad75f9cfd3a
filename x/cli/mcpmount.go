package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/mcp"
)

// mountMCP connects the configured MCP servers and mounts each under its
// name ("<name>__<tool>").
func mountMCP(ctx context.Context, tb *toolbox, cfg *Config) error {
	for i, s := range cfg.MCP {
		opts := append([]mcp.Option{mcp.WithName(s.Name)}, mcpFeatures(cfg, s)...)
		if s.ReadOnly {
			opts = append(opts, mcp.WithReadOnly())
		}
		if len(s.Trust) > 0 {
			opts = append(opts, mcp.WithTrusted(s.Trust...))
		}
		opts = append(opts, mcp.WithLabels(s.Labels.client()))
		for _, n := range slices.Sorted(maps.Keys(s.ToolLabels)) {
			opts = append(opts, mcp.WithLabels(s.ToolLabels[n].over(s.Labels).client(), n))
		}
		if s.Timeout > 0 {
			opts = append(opts, mcp.WithCallTimeout(time.Duration(s.Timeout)))
		}
		if s.ConnectTimeout > 0 {
			opts = append(opts, mcp.WithConnectTimeout(time.Duration(s.ConnectTimeout)))
		}
		if s.URL != "" {
			opts = append(opts, mcp.WithHTTP(s.URL))
			keys := make([]string, 0, len(s.Headers))
			for k := range s.Headers {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				opts = append(opts, mcp.WithHeader(k, s.Headers[k]))
			}
			if s.httpc != nil {
				opts = append(opts, mcp.WithHTTPClient(s.httpc))
			}
		} else {
			opts = append(opts, mcp.WithStdio(s.Command[0], s.Command[1:]...))
			env := make([]string, 0, len(s.Env))
			for k, v := range s.Env {
				env = append(env, k+"="+v)
			}
			sort.Strings(env)
			if len(env) > 0 {
				opts = append(opts, mcp.WithEnv(env...))
			}
			if s.InheritEnv {
				opts = append(opts, mcp.WithParentEnv())
			}
		}
		c, err := mcp.NewClient(opts...)
		if err != nil {
			return fmt.Errorf("mcp server %q: %w", s.Name, err)
		}
		tb.closers = append(tb.closers, c.Close)
		if err := tb.reg.Mount(ctx, c); err != nil {
			return fmt.Errorf("mcp server %q: %w", s.Name, err)
		}
		if err := checkTrust(ctx, cfg, i, c); err != nil {
			return err
		}
	}
	return nil
}

// checkTrust refuses a name in an MCP server's trust: list that the server
// does not offer: a misspelt name would leave its tool waiting for
// approval on every call, with nothing said.
func checkTrust(ctx context.Context, cfg *Config, i int, c *mcp.Client) error {
	s := cfg.MCP[i]
	if len(s.Trust) == 0 && len(s.ToolLabels) == 0 {
		return nil
	}
	tools, err := c.Tools(ctx)
	if err != nil {
		return fmt.Errorf("mcp server %q: %w", s.Name, err)
	}
	names := make([]string, len(tools))
	for k, t := range tools {
		names[k] = t.Name
	}
	sort.Strings(names)
	for j, n := range s.Trust {
		if !slices.Contains(names, n) {
			at := cfg.file.at(fmt.Sprintf("mcp[%d].trust[%d]", i, j))
			if own := strings.TrimPrefix(n, s.Name+tool.Separator); own != n && slices.Contains(names, own) {
				return fmt.Errorf("%s: mcp server %q, trust %q: write %q, the server's own name for it", at, s.Name, n, own)
			}
			return fmt.Errorf("%s: mcp server %q, trust %q: no tool of the server matches; its tools are %s",
				at, s.Name, n, strings.Join(names, ", "))
		}
	}
	// A misspelt name in tool_labels: would leave its tool labelled as the
	// server's others, which may say less than the operator meant.
	for _, n := range slices.Sorted(maps.Keys(s.ToolLabels)) {
		if !slices.Contains(names, n) {
			return fmt.Errorf("%s: mcp server %q, tool_labels %q: no tool of the server matches; its tools are %s",
				cfg.file.at(fmt.Sprintf("mcp[%d].tool_labels", i)), s.Name, n, strings.Join(names, ", "))
		}
	}
	return nil
}
