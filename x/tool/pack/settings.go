package pack

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Settings say which packs mount and how each is configured.
//
// In YAML, Settings read the tools: key of a document and ignore every
// other key, which belong to the caller; a command embeds Settings inline
// in its own configuration struct, or holds a ToolsMap under "tools".
type Settings struct {
	// Defaults are mounted first, in order: the packs an application turns
	// on whatever the configuration says (the seed's defaultToolPacks).
	Defaults []string `yaml:"-"`
	// Tools is the tools: map, in the order the configuration gives it.
	// Each key turns a pack on; its value is that pack's options.
	Tools ToolsMap `yaml:"tools,omitempty"`
	// HTTPClient is handed to every mounted tool call through its context
	// (see WithHTTPClient), unless the call's context already carries one.
	// Nil leaves the network closed.
	HTTPClient *http.Client `yaml:"-"`
}

// PackConfig is one entry of the tools: map.
type PackConfig struct {
	Name string
	// Options is the pack's option slice; nil or empty means none.
	Options map[string]any
}

// ToolsMap is the tools: map with its key order kept: the order packs are
// mounted in.
type ToolsMap []PackConfig

// Packs returns the names of the packs to mount: the defaults, then every
// key of the tools: map, each once, first seen wins.
func (s Settings) Packs() []string {
	out := make([]string, 0, len(s.Defaults)+len(s.Tools))
	for _, n := range s.Defaults {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, c := range s.Tools {
		if !slices.Contains(out, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// Options returns the options the tools: map gives the pack name, or nil.
func (s Settings) Options(name string) map[string]any {
	for _, c := range s.Tools {
		if c.Name == name {
			return c.Options
		}
	}
	return nil
}

// ParseConfig reads the tools: map of a YAML document. Other top-level keys
// are left to the caller. An empty document, or one without tools:, gives
// Settings with no packs.
func ParseConfig(doc []byte) (Settings, error) {
	var s Settings
	if err := yaml.Unmarshal(doc, &s); err != nil {
		return Settings{}, fmt.Errorf("pack: config: %w", err)
	}
	return s, nil
}

// UnmarshalYAML reads a mapping of pack name to options, keeping its
// order. A pack given with no value ("echo:") or an empty map ("echo: {}")
// is on with no options.
func (m *ToolsMap) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind == yaml.AliasNode {
		node = node.Alias
	}
	if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
		*m = nil
		return nil
	}
	if node.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: tools must be a map of pack name to options, got %s", node.Line, kindName(node))
	}
	out := make(ToolsMap, 0, len(node.Content)/2)
	lines := make(map[string]int, len(node.Content)/2)
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			return fmt.Errorf("line %d: a tools key must be a pack name, got %s", k.Line, kindName(k))
		}
		name := k.Value
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("line %d: a tools key is blank; it must name a pack", k.Line)
		}
		if prev, ok := lines[name]; ok {
			return fmt.Errorf("line %d: tools.%s is given twice (first at line %d)", k.Line, name, prev)
		}
		lines[name] = k.Line
		opts, err := decodeOptions(name, v)
		if err != nil {
			return err
		}
		out = append(out, PackConfig{Name: name, Options: opts})
	}
	*m = out
	return nil
}

func decodeOptions(name string, v *yaml.Node) (map[string]any, error) {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: tools.%s must be a map of options (use {} for none), got %s", v.Line, name, kindName(v))
	}
	var opts map[string]any
	if err := v.Decode(&opts); err != nil {
		return nil, fmt.Errorf("line %d: tools.%s: %w", v.Line, name, err)
	}
	return opts, nil
}

// MarshalYAML writes the map in its order.
func (m ToolsMap) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, c := range m {
		var v yaml.Node
		opts := c.Options
		if opts == nil {
			opts = map[string]any{}
		}
		if err := v.Encode(opts); err != nil {
			return nil, fmt.Errorf("tools.%s: %w", c.Name, err)
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: c.Name}, &v)
	}
	return n, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	case yaml.ScalarNode:
		return fmt.Sprintf("%s %q", strings.TrimPrefix(n.Tag, "!!"), n.Value)
	}
	return "an unsupported node"
}

type settingsKey struct{}

// WithSettings gives tool calls made with ctx the settings their pack was
// mounted with. The router does this for every call it routes.
func WithSettings(ctx context.Context, s Settings) context.Context {
	return context.WithValue(ctx, settingsKey{}, s)
}

// SettingsFrom returns the settings given by WithSettings; ok is false
// when there are none.
func SettingsFrom(ctx context.Context) (s Settings, ok bool) {
	s, ok = ctx.Value(settingsKey{}).(Settings)
	return s, ok
}
