package local

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// item is one parsed item file: its front matter (as a YAML node, so a
// rewrite keeps the keys' order and comments) and its body, kept byte for
// byte.
type item struct {
	id    string
	front *yaml.Node // a mapping node
	doc   *yaml.Node // the document holding front
	body  []byte
	// open and close are the delimiter lines as written (with their line
	// ending), so a rewrite keeps the body's boundary byte for byte.
	open, close []byte
}

// Core front-matter keys; everything else is a free field.
const (
	keyID        = "id"
	keyTitle     = "title"
	keyState     = "state"
	keyStateType = "stateType"
	keyLabels    = "labels"
	keyComments  = "comments"
)

var coreKeys = []string{keyID, keyTitle, keyState, keyStateType, keyLabels, keyComments}

// parseItem reads an item file named <id>.md. Every way the file can be
// malformed is an error whose text says what to fix.
func parseItem(id string, data []byte) (*item, error) {
	open, front, close, body, err := splitFrontMatter(data)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(front, &doc); err != nil {
		return nil, fmt.Errorf("front matter is not valid YAML: %w", err)
	}
	if doc.Kind == 0 { // empty front matter
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, errors.New("front matter must be a map of fields")
	}
	it := &item{id: id, front: m, doc: &doc, body: body, open: open, close: close}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: a front matter key must be a plain name", k.Line+1)
		}
		if seen[k.Value] {
			return nil, fmt.Errorf("line %d: %q is given twice", k.Line+1, k.Value)
		}
		seen[k.Value] = true
	}
	if v := it.get(keyID); v != nil {
		if v.Kind != yaml.ScalarNode || v.Value != id {
			return nil, fmt.Errorf("front matter id %s does not match the file name %s.md", nodeText(v), id)
		}
	}
	title := it.get(keyTitle)
	if title == nil {
		return nil, errors.New("title is missing")
	}
	if !isString(title) {
		return nil, fmt.Errorf("title must be text, got %s", nodeText(title))
	}
	for _, k := range []string{keyState, keyStateType} {
		if v := it.get(k); v != nil && !isString(v) {
			return nil, fmt.Errorf("%s must be text, got %s", k, nodeText(v))
		}
	}
	if v := it.get(keyLabels); v != nil {
		if v.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("labels must be a list, got %s", nodeText(v))
		}
		for _, l := range v.Content {
			if !isString(l) {
				return nil, fmt.Errorf("labels must be a list of text, got %s", nodeText(l))
			}
		}
	}
	if v := it.get(keyComments); v != nil && v.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("comments must be a list, got %s", nodeText(v))
	}
	return it, nil
}

func isString(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!str" }

func nodeText(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Sprintf("%s %q", strings.TrimPrefix(n.Tag, "!!"), v)
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	case yaml.AliasNode:
		return "an alias"
	}
	return "an unsupported value"
}

// splitFrontMatter splits "---\n<yaml>---\n<body>" into the opening
// line, the YAML, the closing line and the body. Lines may end in \r\n.
func splitFrontMatter(data []byte) (open, front, close, body []byte, err error) {
	first, rest, ok := cutLine(data)
	if !ok || string(bytes.TrimRight(first, "\r")) != "---" {
		return nil, nil, nil, nil, errors.New("no front matter: the file must start with a --- line")
	}
	start := len(data) - len(rest)
	for pos := start; ; {
		line, next, more := cutLine(data[pos:])
		if string(bytes.TrimRight(line, "\r")) == "---" {
			end := len(data) - len(next)
			return data[:start], data[start:pos], data[pos:end], next, nil
		}
		if !more {
			return nil, nil, nil, nil, errors.New("front matter is not closed by a --- line")
		}
		pos = len(data) - len(next)
	}
}

// cutLine returns the first line of b (without \n), the rest, and whether
// a \n was found.
func cutLine(b []byte) (line, rest []byte, found bool) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:], true
	}
	return b, nil, false
}

// get returns the value node of key, or nil.
func (it *item) get(key string) *yaml.Node {
	m := it.front
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// set replaces the value of key, or adds it at the end.
func (it *item) set(key string, v *yaml.Node) {
	m := it.front
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, str(key), v)
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func (it *item) labels() []string {
	var out []string
	if v := it.get(keyLabels); v != nil {
		for _, l := range v.Content {
			out = append(out, l.Value)
		}
	}
	return out
}

// encode writes the item back: front matter, then the body unchanged.
func (it *item) encode() ([]byte, error) {
	var buf bytes.Buffer
	if it.open == nil {
		it.open, it.close = []byte("---\n"), []byte("---\n")
	}
	buf.Write(it.open)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if len(it.front.Content) > 0 {
		if err := enc.Encode(it.doc); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	buf.Write(it.close)
	if len(it.close) == 3 && len(it.body) > 0 {
		buf.WriteByte('\n') // the closing line ended the file, but now a body follows
	}
	buf.Write(it.body)
	return buf.Bytes(), nil
}

// fields returns the front matter as JSON-like values (maps with string
// keys, timestamps as RFC 3339 text), with id set to the item's id.
func (it *item) fields() (map[string]any, error) {
	var m map[string]any
	if err := it.front.Decode(&m); err != nil {
		return nil, fmt.Errorf("front matter: %w", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	for k, v := range m {
		m[k] = plain(v)
	}
	m[keyID] = it.id
	return m, nil
}

// jsonSafe replaces, at any depth and in place, each number JSON cannot
// hold with its name: "NaN", "Infinity" or "-Infinity". Results are
// rendered as JSON, which refuses those numbers, so without this one odd
// field would fail the whole call. It runs after a query has filtered and
// sorted, so the query still sees the numbers.
func jsonSafe(v any) any {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x):
			return "NaN"
		case math.IsInf(x, 1):
			return "Infinity"
		case math.IsInf(x, -1):
			return "-Infinity"
		}
	case map[string]any:
		for k, e := range x {
			x[k] = jsonSafe(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonSafe(e)
		}
	}
	return v
}

func plain(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case map[string]any:
		for k, e := range x {
			x[k] = plain(e)
		}
		return x
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = plain(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = plain(e)
		}
		return x
	}
	return v
}

// numericID returns n when id is a decimal number, for numbering new items.
func numericID(id string) (int, bool) {
	n, err := strconv.Atoi(id)
	return n, err == nil && n >= 0 && strconv.Itoa(n) == id
}
