package query

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// A cursor is the offset of the next page and a fingerprint of the filter
// and sort it was made for, so it is refused by a different query. It is
// opaque to the model.
const cursorPrefix = "q1."

func (q *Query) makeCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s%d.%x", cursorPrefix, offset, q.fp))
}

func (p *parser) cursor(v any, fp uint64) (int, error) {
	s, ok := v.(string)
	if !ok {
		return 0, errf("cursor", "must be a string, got %s", kind(v))
	}
	bad := errf("cursor", "not a cursor this tool made; pass the next_cursor of a previous result, or omit it")
	if len(s) > p.l.MaxString {
		return 0, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, bad
	}
	rest, ok := strings.CutPrefix(string(raw), cursorPrefix)
	if !ok {
		return 0, bad
	}
	offS, fpS, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, bad
	}
	off, err := strconv.Atoi(offS)
	if err != nil || off < 0 || off > p.l.MaxOffset {
		return 0, bad
	}
	got, err := strconv.ParseUint(fpS, 16, 64)
	if err != nil {
		return 0, bad
	}
	if got != fp {
		return 0, errf("cursor", "the cursor was made for a different filter or sort; start again without it")
	}
	return off, nil
}

// fingerprint hashes the filter and sort.
func (q *Query) fingerprint() uint64 {
	h := fnv.New64a()
	b, _ := json.Marshal(struct {
		F any       `json:"f"`
		S []SortKey `json:"s"`
	}{filterJSON(q.Filter), q.Sort})
	h.Write(b)
	return h.Sum64()
}

// filterJSON renders a filter in the DSL's JSON shape.
func filterJSON(f Filter) any {
	switch x := f.(type) {
	case *And:
		return map[string]any{"and": listJSON(x.Filters)}
	case *Or:
		return map[string]any{"or": listJSON(x.Filters)}
	case *Not:
		return map[string]any{"not": filterJSON(x.Filter)}
	case *Predicate:
		m := map[string]any{"field": x.Field, "op": x.Op, "value": x.Value}
		if x.CI {
			m["ci"] = true
		}
		return m
	}
	return nil
}

func listJSON(fs []Filter) []any {
	out := make([]any, len(fs))
	for i, f := range fs {
		out[i] = filterJSON(f)
	}
	return out
}

// MarshalJSON writes the filter in the shape Parse reads.
func (f *And) MarshalJSON() ([]byte, error) { return json.Marshal(filterJSON(f)) }

// MarshalJSON writes the filter in the shape Parse reads.
func (f *Or) MarshalJSON() ([]byte, error) { return json.Marshal(filterJSON(f)) }

// MarshalJSON writes the filter in the shape Parse reads.
func (f *Not) MarshalJSON() ([]byte, error) { return json.Marshal(filterJSON(f)) }

// MarshalJSON writes the filter in the shape Parse reads.
func (p *Predicate) MarshalJSON() ([]byte, error) { return json.Marshal(filterJSON(p)) }
