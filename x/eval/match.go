package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// decodeJSON decodes text keeping numbers exact, so 3 and 3.0 compare
// equal and large integers do not round.
func decodeJSON(text string) (any, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("text after the JSON value")
	}
	return v, nil
}

// matchPattern reports where got differs from the pattern want, or "" when
// it matches. An object in the pattern matches an object holding at least
// its keys, each matching; an array matches an array of the same length,
// element by element; anything else must be equal (numbers by value).
func matchPattern(path string, got, want any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("at %s: %s, want an object", path, show(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("at %s: missing, want %s", join(path, k), show(w[k]))
			}
			if d := matchPattern(join(path, k), gv, w[k]); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("at %s: %s, want an array", path, show(got))
		}
		if len(g) != len(w) {
			return fmt.Sprintf("at %s: %d elements, want %d", path, len(g), len(w))
		}
		for i := range w {
			if d := matchPattern(path+"["+strconv.Itoa(i)+"]", g[i], w[i]); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		if g, ok := got.(json.Number); ok && sameNumber(g, w) {
			return ""
		}
	default:
		if fmt.Sprintf("%T", got) == fmt.Sprintf("%T", want) && got == want {
			return ""
		}
	}
	return fmt.Sprintf("at %s: %s, want %s", path, show(got), show(want))
}

func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, err1 := a.Float64()
	y, err2 := b.Float64()
	return err1 == nil && err2 == nil && x == y
}

func join(path, key string) string {
	if key != "" && strings.IndexFunc(key, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return path + "." + key
	}
	q, _ := json.Marshal(key)
	return path + "[" + string(q) + "]"
}

// show writes v as compact JSON, cut to 80 bytes.
func show(v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(v)
	return cut(strings.TrimSpace(b.String()), 80)
}

// cut keeps s to n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8Start(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// compileSchema resolves a JSON Schema for validating arguments.
func compileSchema(text string) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return nil, fmt.Errorf("eval: schema: %w", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("eval: schema: %w", err)
	}
	return r, nil
}

// plainJSON decodes text for schema validation (float64 numbers, as the
// validator expects).
func plainJSON(text string) (any, error) {
	var v any
	err := json.Unmarshal([]byte(text), &v)
	return v, err
}
