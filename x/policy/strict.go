package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// A policy is a security boundary, so whatever the YAML decoder would pass
// over without a word is an error naming its line: a second document
// (every rule in it would be ignored), a duplicate key (one of the two
// would win), a merge key (the values it brings in are overridden
// silently by the mapping's own) and an explicit tag (a custom tag is
// dropped, !!binary rewrites the text).

// readDocument reads data as exactly one YAML document; an empty input is
// an empty document.
func readDocument(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &doc, nil
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, fmt.Errorf("%w: line %d: a second YAML document starts here; a policy is one document, and the rules of any other would be ignored", ErrInvalid, documentLine(&next))
	case !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%w: after the first document: %w", ErrInvalid, err)
	}
	return &doc, nil
}

// documentLine is the line a document's content starts on.
func documentLine(doc *yaml.Node) int {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return doc.Content[0].Line
	}
	return doc.Line
}

// strict refuses, in n and below, the duplicate keys, merge keys and tags
// described above. Aliases are not followed: the node they name is checked
// where it is defined.
func strict(n *yaml.Node) error {
	if n.Style&yaml.TaggedStyle != 0 {
		return fmt.Errorf("%w: line %d: the YAML tag %s is not taken in a policy; write the value plainly", ErrInvalid, n.Line, n.Tag)
	}
	if err := uniqueKeys(n); err != nil {
		return err
	}
	if n.Kind == yaml.AliasNode {
		return nil
	}
	for _, c := range n.Content {
		if err := strict(c); err != nil {
			return err
		}
	}
	return nil
}

// uniqueKeys refuses a mapping n that gives a key twice or holds a merge
// key; other nodes pass.
func uniqueKeys(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			continue
		}
		if k.Tag == "!!merge" {
			return fmt.Errorf("%w: line %d: a merge key (<<) is not taken in a policy: the keys of this mapping would override what it merges without a word; write each rule out", ErrInvalid, k.Line)
		}
		if first, dup := seen[k.Value]; dup {
			return fmt.Errorf("%w: line %d: the key %q is already given at line %d; only one of the two would count", ErrInvalid, k.Line, k.Value, first)
		}
		seen[k.Value] = k.Line
	}
	return nil
}
