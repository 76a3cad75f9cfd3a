package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// member is one JSON object member: a name and its encoded value.
type member struct {
	name  string
	value []byte
}

// bodyEdits are what a request says beyond go-openai's types: top-level
// members that replace the adapter's own or join them, and members added
// to messages by their index in the messages list.
type bodyEdits struct {
	top  []member
	msgs map[int][]member
}

func (e *bodyEdits) empty() bool { return len(e.top) == 0 && len(e.msgs) == 0 }

// setTop sets a top-level member; a later one of the same name wins.
func (e *bodyEdits) setTop(m member) {
	for i := range e.top {
		if e.top[i].name == m.name {
			e.top[i] = m
			return
		}
	}
	e.top = append(e.top, m)
}

func (e *bodyEdits) addToMessage(i int, m member) {
	if e.msgs == nil {
		e.msgs = make(map[int][]member)
	}
	e.msgs[i] = append(e.msgs[i], m)
}

var errBody = errors.New("request body is not a JSON object")

// apply rewrites body, the compact JSON object go-openai wrote. It walks the
// top level once and touches only the members it changes, so the rest of
// the body goes out byte for byte.
func (e *bodyEdits) apply(body []byte) ([]byte, error) {
	type edit struct {
		at, end int
		with    []byte
	}
	var edits []edit
	if len(body) == 0 || body[0] != '{' {
		return nil, errBody
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errBody
	}
	seen := make(map[string]bool, len(e.top))
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errBody, err)
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: %w", errBody, err)
		}
		end := int(dec.InputOffset())
		start := end - len(v)
		if i := slices.IndexFunc(e.top, func(m member) bool { return m.name == key }); i >= 0 {
			seen[key] = true
			edits = append(edits, edit{start, end, e.top[i].value})
			continue
		}
		if key != "messages" || len(e.msgs) == 0 {
			continue
		}
		md := json.NewDecoder(bytes.NewReader(v))
		if t, err := md.Token(); err != nil || t != json.Delim('[') {
			return nil, fmt.Errorf("%w: messages is not a list", errBody)
		}
		for i := 0; md.More(); i++ {
			var m json.RawMessage
			if err := md.Decode(&m); err != nil {
				return nil, fmt.Errorf("%w: %w", errBody, err)
			}
			ms := e.msgs[i]
			if len(ms) == 0 {
				continue
			}
			// Before the message's closing brace; a message always has
			// a role, so a comma leads.
			at := start + int(md.InputOffset()) - 1
			var b []byte
			for _, x := range ms {
				b = appendMember(append(b, ','), x)
			}
			edits = append(edits, edit{at, at, b})
		}
	}
	var head []byte
	for _, m := range e.top {
		if !seen[m.name] {
			head = append(appendMember(head, m), ',')
		}
	}
	out := make([]byte, 0, len(body)+len(head)+64)
	out = append(out, '{')
	out = append(out, head...)
	pos := 1
	for _, ed := range edits {
		out = append(out, body[pos:ed.at]...)
		out = append(out, ed.with...)
		pos = ed.end
	}
	return append(out, body[pos:]...), nil
}

func appendMember(b []byte, m member) []byte {
	name, _ := marshalString(m.name)
	b = append(b, name...)
	b = append(b, ':')
	return append(b, m.value...)
}
