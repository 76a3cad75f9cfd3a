package cassette

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// normBody is a body as matching sees it: JSON after its configured
// fields are scrubbed, canonical in key order and whitespace; anything
// else as bytes.
type normBody struct {
	json  bool
	v     any
	canon string
	raw   []byte
}

func normalise(body []byte, fields [][]string) *normBody {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || !json.Valid(trimmed) {
		return &normBody{raw: body}
	}
	v, err := decodeJSON(trimmed)
	if err != nil {
		return &normBody{raw: body}
	}
	for _, f := range fields {
		scrubPath(v, f)
	}
	return &normBody{json: true, v: v, canon: encodeJSON(v)}
}

func (n *normBody) equal(m *normBody) bool {
	if n.json != m.json {
		return false
	}
	if n.json {
		return n.canon == m.canon
	}
	return bytes.Equal(n.raw, m.raw)
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// encodeJSON writes v with sorted keys, no extra whitespace and no HTML
// escaping.
func encodeJSON(v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// normCache normalises each recorded body once.
type normCache struct {
	fields [][]string
	mu     sync.Mutex
	m      map[string]*normBody
}

func newNormCache(fields [][]string) *normCache {
	return &normCache{fields: fields, m: map[string]*normBody{}}
}

func (c *normCache) of(body string) *normBody {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.m[body]; ok {
		return n
	}
	n := normalise([]byte(body), c.fields)
	c.m[body] = n
	return n
}

// sameURL compares two URLs with their query parameters in any order.
func sameURL(a, b string) bool {
	if a == b {
		return true
	}
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		ua.Path == ub.Path && ua.Query().Encode() == ub.Query().Encode() && ua.Fragment == ub.Fragment
}

// firstDiff describes where recorded and request first differ, as a JSON
// path and both values; ok is false when they do not.
func firstDiff(path string, rec, req any) (string, bool) {
	switch r := rec.(type) {
	case map[string]any:
		q, isMap := req.(map[string]any)
		if !isMap {
			break
		}
		for _, k := range unionKeys(r, q) {
			rv, inRec := r[k]
			qv, inReq := q[k]
			p := path + "." + k
			switch {
			case !inRec:
				return fmt.Sprintf("%s: recorded no such field, request %s", p, show(qv)), true
			case !inReq:
				return fmt.Sprintf("%s: recorded %s, request has no such field", p, show(rv)), true
			}
			if d, ok := firstDiff(p, rv, qv); ok {
				return d, true
			}
		}
		return "", false
	case []any:
		q, isArr := req.([]any)
		if !isArr {
			break
		}
		for i := range min(len(r), len(q)) {
			if d, ok := firstDiff(path+"["+strconv.Itoa(i)+"]", r[i], q[i]); ok {
				return d, true
			}
		}
		if len(r) != len(q) {
			return fmt.Sprintf("%s: recorded %d elements, request %d", path, len(r), len(q)), true
		}
		return "", false
	}
	if reflect.DeepEqual(rec, req) {
		return "", false
	}
	return fmt.Sprintf("%s: recorded %s, request %s", path, show(rec), show(req)), true
}

// countDiffs counts the leaves where rec and req differ, up to limit.
func countDiffs(rec, req any, limit int) int {
	switch r := rec.(type) {
	case map[string]any:
		if q, ok := req.(map[string]any); ok {
			n := 0
			for _, k := range unionKeys(r, q) {
				if n >= limit {
					return n
				}
				n += countDiffs(r[k], q[k], limit-n)
			}
			return n
		}
	case []any:
		if q, ok := req.([]any); ok {
			n := max(len(r), len(q)) - min(len(r), len(q))
			for i := range min(len(r), len(q)) {
				if n >= limit {
					return min(n, limit)
				}
				n += countDiffs(r[i], q[i], limit-n)
			}
			return min(n, limit)
		}
	}
	if reflect.DeepEqual(rec, req) {
		return 0
	}
	return 1
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// show renders a JSON value for a message, bounded.
func show(v any) string {
	return clip(encodeJSON(v), 120)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// bytesDiff describes where two non-JSON bodies first differ.
func bytesDiff(rec, req []byte) string {
	i := 0
	for i < len(rec) && i < len(req) && rec[i] == req[i] {
		i++
	}
	at := func(b []byte) string {
		if i >= len(b) {
			return "the end"
		}
		return strconv.Quote(clip(string(b[i:]), 40))
	}
	return fmt.Sprintf("body byte %d: recorded %s, request %s", i, at(rec), at(req))
}
