package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/openai"
	"github.com/lodeworks/lode/x/tool/mcp"
	"github.com/lodeworks/lode/x/tool/pack"
)

// fileLines remembers the line of every key of a configuration file, by
// its path ("model.timeout", "mcp[0].name", "tools.calculator").
type fileLines struct {
	name  string
	lines map[string]int
}

// at names the place of path for an error: "lode.yaml:3", or only the file
// when the key is not in it.
func (f *fileLines) at(path string) string {
	if f == nil {
		return "lode.yaml"
	}
	if n, ok := f.lines[path]; ok {
		return fmt.Sprintf("%s:%d", f.name, n)
	}
	return f.name
}

var (
	durationType = reflect.TypeFor[Duration]()
	toolsMapType = reflect.TypeFor[pack.ToolsMap]()
)

// entryNames says what one entry of a list section is, for errors.
var entryNames = map[string]string{"mcp": "an mcp: server", "a2a": "an a2a: agent", "tokens": "a tokens: entry", "guards.rules": "a guards.rules: entry"}

// checkKeys walks a node of the file against the Go type it decodes into:
// every key must be one the type has, every section the shape it needs,
// every duration one time.ParseDuration reads. where says which section
// the node is, for the message about an unknown key.
func (f *fileLines) checkKeys(n *yaml.Node, t reflect.Type, path, where string) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Tag == "!!null" {
		return nil
	}
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s:%d: %s must be a duration (write e.g. 90s, 5m or 1h30m)", f.name, n.Line, path)
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return fmt.Errorf("%s:%d: %s: %q is not a duration (write e.g. 90s, 5m or 1h30m)", f.name, n.Line, path, n.Value)
		}
	case t == toolsMapType:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if _, seen := f.lines[path+"."+k.Value]; !seen {
					f.lines[path+"."+k.Value] = k.Line
				}
			}
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if path == "" {
				return fmt.Errorf("%s:%d: the file must be a mapping of keys (model:, system:, max_turns:, tools:, mcp:)", f.name, n.Line)
			}
			return fmt.Errorf("%s:%d: %s must be a mapping of keys", f.name, n.Line, path)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // a YAML merge key; its keys are checked where they are written
				continue
			}
			field, ok := fieldByKey(t, k.Value)
			if !ok {
				hint := ""
				if k.Value == "api_key" {
					hint = " (the key never goes in the file: api_key_env names the variable that holds it)"
				}
				if k.Value == "client_secret" && strings.HasSuffix(path, ".oauth") {
					hint = " (the secret never goes in the file: client_secret_env or client_secret_file says where it is)"
				}
				if k.Value == "token" && strings.HasPrefix(path, "tokens[") {
					hint = " (the token never goes in the file: env: or file: says where it is)"
				}
				return fmt.Errorf("%s:%d: unknown key %q %s%s", f.name, k.Line, k.Value, where, hint)
			}
			sub := k.Value
			if path != "" {
				sub = path + "." + k.Value
			}
			f.lines[sub] = k.Line
			if err := f.checkKeys(v, field.Type, sub, "in "+sub+":"); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s:%d: %s must be a mapping of names", f.name, n.Line, path)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := path + "." + k.Value
			f.lines[sub] = k.Line
			if err := f.checkKeys(v, t.Elem(), sub, "in "+sub+":"); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String && n.Kind == yaml.SequenceNode:
		// Each entry's line, for an error about one name of a list.
		for i, item := range n.Content {
			f.lines[fmt.Sprintf("%s[%d]", path, i)] = item.Line
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s:%d: %s must be a list", f.name, n.Line, path)
		}
		entry, ok := entryNames[path]
		if !ok {
			entry = "an entry of " + path + ":"
		}
		for i, item := range n.Content {
			sub := fmt.Sprintf("%s[%d]", path, i)
			f.lines[sub] = item.Line
			if err := f.checkKeys(item, t.Elem(), sub, "in "+entry); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldByKey finds the field of struct type t that the YAML key k fills.
func fieldByKey(t reflect.Type, k string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); f.IsExported() && name == k && name != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// parseConfig reads a lode.yaml. An unknown key, a section of the wrong
// shape or a bad value is an error that names its line.
func parseConfig(name string, data []byte) (*Config, error) {
	// One document: a second one (after ---) would be dropped without a
	// word, and with it any policy:, approve: or tokens: it holds.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		line := next.Line
		if len(next.Content) > 0 {
			line = next.Content[0].Line
		}
		return nil, fmt.Errorf("%s:%d: a second YAML document starts here; lode.yaml is one document, and the settings of any other would be ignored", name, line)
	case !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%s: after the first document: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	f := &fileLines{name: name, lines: map[string]int{}}
	cfg := &Config{file: f}
	if len(doc.Content) == 0 {
		return cfg, nil
	}
	root := doc.Content[0]
	if err := f.checkKeys(root, reflect.TypeFor[Config](), "", "at the top level"); err != nil {
		return nil, err
	}
	if err := root.Decode(cfg); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
		return nil, fmt.Errorf("%s: %s", name, msg)
	}
	for i, s := range cfg.MCP {
		at := f.at(fmt.Sprintf("mcp[%d]", i))
		switch {
		case s.Name == "":
			return nil, fmt.Errorf("%s: mcp[%d] has no name", at, i)
		case len(s.Command) == 0 && s.URL == "":
			return nil, fmt.Errorf("%s: mcp server %q needs a command or a url", at, s.Name)
		case s.URL != "" && (len(s.Env) > 0 || s.InheritEnv):
			return nil, fmt.Errorf("%s: mcp server %q: env and inherit_env apply to a command, not a url", at, s.Name)
		case len(s.Command) > 0 && s.URL != "":
			return nil, fmt.Errorf("%s: mcp server %q has both a command and a url; choose one", at, s.Name)
		case s.Timeout < 0 || (s.Timeout == 0 && f.lines[fmt.Sprintf("mcp[%d].timeout", i)] != 0):
			return nil, fmt.Errorf("%s: mcp server %q: timeout must be more than 0 (leave it out for the client's default)", f.at(fmt.Sprintf("mcp[%d].timeout", i)), s.Name)
		case s.ConnectTimeout < 0 || (s.ConnectTimeout == 0 && f.lines[fmt.Sprintf("mcp[%d].connect_timeout", i)] != 0):
			return nil, fmt.Errorf("%s: mcp server %q: connect_timeout must be more than 0 (leave it out for the default, %s)", f.at(fmt.Sprintf("mcp[%d].connect_timeout", i)), s.Name, mcp.DefaultConnectTimeout)
		}
		if s.ReadOnly && len(s.Trust) > 0 {
			return nil, fmt.Errorf("%s: mcp server %q: read_only: true already trusts every tool of the server; leave trust: out", f.at(fmt.Sprintf("mcp[%d].trust", i)), s.Name)
		}
		for n := range s.ToolLabels {
			if strings.TrimSpace(n) == "" {
				return nil, fmt.Errorf("%s: mcp server %q: tool_labels: a tool name is empty; write the names of the server's tools", f.at(fmt.Sprintf("mcp[%d].tool_labels", i)), s.Name)
			}
		}
		for j, n := range s.Trust {
			if strings.TrimSpace(n) == "" {
				return nil, fmt.Errorf("%s: mcp server %q: trust: entry %d is empty; write the names of the server's tools", f.at(fmt.Sprintf("mcp[%d].trust[%d]", i, j)), s.Name, j+1)
			}
		}
		if err := cfg.MCP[i].OAuth.check(f, fmt.Sprintf("mcp[%d].oauth", i), s); err != nil {
			return nil, err
		}
	}
	if err := checkA2A(cfg, f); err != nil {
		return nil, err
	}
	if err := checkProvider(f.at("model.provider")+": model.provider", cfg.Model.Provider); err != nil {
		return nil, err
	}
	if err := cfg.Guards.check(f); err != nil {
		return nil, err
	}
	if err := cfg.Memory.check(f); err != nil {
		return nil, err
	}
	if err := cfg.Trace.check(f); err != nil {
		return nil, err
	}
	if err := checkCost(cfg); err != nil {
		return nil, err
	}
	if err := checkFallback(cfg, f); err != nil {
		return nil, err
	}
	if cfg.MaxTurns < 0 {
		return nil, fmt.Errorf("%s: max_turns must not be negative (0 means the default, %d)", f.at("max_turns"), DefaultMaxTurns)
	}
	if cfg.Model.Timeout < 0 {
		return nil, fmt.Errorf("%s: model.timeout must not be negative (0 means no limit)", f.at("model.timeout"))
	}
	if cfg.Model.IdleTimeout < 0 {
		return nil, fmt.Errorf("%s: model.idle_timeout must not be negative (0 means the default, %s)", f.at("model.idle_timeout"), openai.DefaultIdleTimeout)
	}
	if err := checkLogins(cfg, f); err != nil {
		return nil, err
	}
	if cfg.Lease < 0 {
		return nil, fmt.Errorf("%s: lease must not be negative (0 means the default, %s)", f.at("lease"), loop.DefaultLeaseTTL)
	}
	if cfg.ApprovalExpiry < 0 {
		return nil, fmt.Errorf("%s: approval_expiry must not be negative (0 means calls wait for approval for ever)", f.at("approval_expiry"))
	}
	return cfg, nil
}
