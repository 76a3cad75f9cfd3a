package cli

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lodeworks/lode/x/policy"
	"github.com/lodeworks/lode/x/tool/local"
	"github.com/lodeworks/lode/x/tool/pack"
)

// TestConfigDocumented keeps docs/config.md and lode.yaml's parser in step:
// every key the parser takes (found by reflection over the yaml tags of
// Config, recursively, with policy: read as x/policy's Document and tools:
// as each built-in pack's options) is a row of the reference, every row
// names a key that exists, and every documented key is written in some
// yaml block of the docs, which TestREADMEAsWritten parses. Keys are dotted
// paths; a map's own names are <name>, a pack's options tools.PACK.OPTION.
func TestConfigDocumented(t *testing.T) {
	keys := configKeys(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(string(data), -1) {
		documented[m[1]] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !documented[k] {
			t.Errorf("lode.yaml takes %s, which docs/config.md has no row for: add one (| `%s` | ... |)", k, k)
		}
	}
	used := map[string]bool{}
	for _, b := range docBlocks(t) {
		if b.lang != "yaml" {
			continue
		}
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(b.text), &doc); err != nil || len(doc.Content) == 0 {
			continue // TestREADMEAsWritten reports it
		}
		walkConfigKeys(doc.Content[0], reflect.TypeFor[Config](), "", used)
	}
	for _, k := range slices.Sorted(maps.Keys(documented)) {
		if !keys[k] {
			t.Errorf("docs/config.md has a row for %s, which lode.yaml does not take: remove it", k)
		} else if !used[k] {
			t.Errorf("docs/config.md documents %s, but no yaml block of README.md or docs/ writes it, so no test parses it: add it to an example", k)
		}
	}
}

var (
	yamlNodeType    = reflect.TypeFor[*yaml.Node]()
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
)

// configKeys is every key lode.yaml takes.
func configKeys(t *testing.T) map[string]bool {
	keys := map[string]bool{}
	var walk func(tp reflect.Type, path string, seen []reflect.Type)
	walk = func(tp reflect.Type, path string, seen []reflect.Type) {
		for tp != toolsMapType && (tp.Kind() == reflect.Pointer || tp.Kind() == reflect.Slice) {
			tp = tp.Elem()
		}
		if slices.Contains(seen, tp) {
			return // model.fallback's entries take model:'s keys
		}
		switch {
		case tp == yamlNodeType.Elem() && path == "policy":
			walk(reflect.TypeFor[policy.Document](), path, seen)
		case tp == toolsMapType:
			for name, build := range builtins {
				for _, o := range packOptions(t, name, build) {
					keys[path+"."+name+"."+o] = true
				}
			}
			keys[path+".local.path"] = true
		case tp.Kind() == reflect.Map && structFields(tp.Elem()) != nil:
			walk(tp.Elem(), path+".<name>", seen)
		case tp.Kind() == reflect.Struct:
			for _, f := range structFields(tp) {
				sub := f.key
				if path != "" {
					sub = path + "." + f.key
				}
				keys[sub] = true
				walk(f.typ, sub, append(seen, tp))
			}
		}
	}
	walk(reflect.TypeFor[Config](), "", nil)
	// The local pack takes one option, and says so.
	if err := local.ValidateOptions(map[string]any{"zz": 1}); err == nil || !strings.Contains(err.Error(), "takes path") {
		t.Fatalf("the local pack's options changed: %v; update configKeys", err)
	}
	return keys
}

type yamlField struct {
	key string
	typ reflect.Type
}

// structFields are tp's yaml keys, or nil when tp is read as a scalar (a
// struct with its own UnmarshalYAML and no tagged fields, like a Pattern).
func structFields(tp reflect.Type) []yamlField {
	for tp.Kind() == reflect.Pointer {
		tp = tp.Elem()
	}
	if tp.Kind() != reflect.Struct {
		return nil
	}
	var out []yamlField
	for i := range tp.NumField() {
		f := tp.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || tag == "-" || tag == "" {
			continue
		}
		out = append(out, yamlField{tag, f.Type})
	}
	if len(out) == 0 && reflect.PointerTo(tp).Implements(unmarshalerType) {
		return nil
	}
	return out
}

// packOptions are the options a built-in pack takes, as its error for an
// unknown one lists them.
func packOptions(t *testing.T, name string, build func(map[string]any) (pack.Pack, error)) []string {
	_, err := build(map[string]any{"zz_not_an_option": 1})
	if err == nil {
		t.Fatalf("pack %s took an unknown option", name)
	}
	_, list, ok := strings.Cut(err.Error(), "the options are ")
	if !ok {
		t.Fatalf("pack %s: %v; want the list of its options", name, err)
	}
	return strings.Split(list, ", ")
}

// walkConfigKeys adds to used the keys n writes, as configKeys names them.
func walkConfigKeys(n *yaml.Node, tp reflect.Type, path string, used map[string]bool) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	for tp.Kind() == reflect.Pointer {
		tp = tp.Elem()
	}
	if tp != toolsMapType && tp.Kind() == reflect.Slice {
		if n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				walkConfigKeys(c, tp.Elem(), path, used)
			}
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	switch {
	case tp == yamlNodeType.Elem() && path == "policy":
		walkConfigKeys(n, reflect.TypeFor[policy.Document](), path, used)
	case tp == toolsMapType:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p, opts := n.Content[i].Value, n.Content[i+1]
			if opts.Kind == yaml.MappingNode {
				for j := 0; j < len(opts.Content); j += 2 {
					used[path+"."+p+"."+opts.Content[j].Value] = true
				}
			}
		}
	case tp.Kind() == reflect.Map && structFields(tp.Elem()) != nil:
		for i := 1; i < len(n.Content); i += 2 {
			walkConfigKeys(n.Content[i], tp.Elem(), path+".<name>", used)
		}
	case tp.Kind() == reflect.Struct:
		fields := structFields(tp)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			at := slices.IndexFunc(fields, func(f yamlField) bool { return f.key == k })
			if at < 0 {
				continue
			}
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			used[sub] = true
			if tp == reflect.TypeFor[ModelConfig]() && k == "fallback" {
				continue // its entries' keys are model:'s
			}
			walkConfigKeys(n.Content[i+1], fields[at].typ, sub, used)
		}
	}
}
