package query

import (
	"bytes"
	"maps"
	"math"
	"slices"
	"strings"
)

// scalarKey is a scalar as a map key: numbers compare by value whatever
// their Go type.
type scalarKey struct {
	kind byte // 0 null, 1 bool, 2 number, 3 string
	f    float64
	s    string
}

func keyOf(v any) (scalarKey, bool) {
	switch x := v.(type) {
	case nil:
		return scalarKey{}, true
	case bool:
		k := scalarKey{kind: 1}
		if x {
			k.f = 1
		}
		return k, true
	case string:
		return scalarKey{kind: 3, s: x}, true
	}
	if f, ok := number(v); ok {
		if f == 0 {
			f = 0 // -0 and 0 are one key
		}
		return scalarKey{kind: 2, f: f}, true
	}
	return scalarKey{}, false
}

// equal reports whether two scalars are equal; values of different types,
// and values that are not scalars, never are.
func equal(a, b any) bool {
	ka, ok := keyOf(a)
	if !ok {
		return false
	}
	kb, ok := keyOf(b)
	return ok && ka == kb
}

// compare orders numbers with numbers and strings with strings; ok is
// false for any other pair, and for NaN, which has no place in the order.
func compare(a, b any) (c int, ok bool) {
	if sa, isStr := a.(string); isStr {
		sb, isStr := b.(string)
		if !isStr {
			return 0, false
		}
		return strings.Compare(sa, sb), true
	}
	fa, okA := number(a)
	fb, okB := number(b)
	if !okA || !okB || math.IsNaN(fa) || math.IsNaN(fb) {
		return 0, false
	}
	switch {
	case fa < fb:
		return -1, true
	case fa > fb:
		return 1, true
	}
	return 0, true
}

// Match implements Filter.
func (f *And) Match(rec map[string]any) bool {
	for _, s := range f.Filters {
		if !s.Match(rec) {
			return false
		}
	}
	return true
}

// Match implements Filter.
func (f *Or) Match(rec map[string]any) bool {
	for _, s := range f.Filters {
		if s.Match(rec) {
			return true
		}
	}
	return false
}

// Match implements Filter.
func (f *Not) Match(rec map[string]any) bool { return f.Filter != nil && !f.Filter.Match(rec) }

// Match implements Filter. An absent field makes every predicate false
// except exists false.
func (p *Predicate) Match(rec map[string]any) bool {
	v, present := rec[p.Field]
	if p.Op == OpExists {
		want, _ := p.Value.(bool)
		return present == want
	}
	if !present {
		return false
	}
	switch p.Op {
	case OpEq:
		return equal(v, p.Value)
	case OpNe:
		return !equal(v, p.Value)
	case OpLt, OpLte, OpGt, OpGte:
		c, ok := compare(v, p.Value)
		if !ok {
			return false
		}
		switch p.Op {
		case OpLt:
			return c < 0
		case OpLte:
			return c <= 0
		case OpGt:
			return c > 0
		}
		return c >= 0
	case OpIn:
		return p.in(v)
	case OpNin:
		return !p.in(v)
	case OpContains:
		return p.contains(v)
	}
	return false
}

func (p *Predicate) in(v any) bool {
	k, ok := keyOf(v)
	if !ok {
		return false
	}
	if p.set != nil {
		return p.set[k]
	}
	list, _ := p.Value.([]any)
	for _, e := range list {
		if ke, ok := keyOf(e); ok && ke == k {
			return true
		}
	}
	return false
}

// contains finds a substring in a string field, or an element in an array
// field (strings compared case-insensitively with CI).
func (p *Predicate) contains(v any) bool {
	needle, ok := p.Value.(string)
	if !ok {
		return false
	}
	lower := p.lower
	if p.CI && lower == "" && needle != "" {
		lower = strings.ToLower(needle)
	}
	switch x := v.(type) {
	case string:
		if p.CI {
			return containsFold(x, lower)
		}
		return strings.Contains(x, needle)
	case []string:
		for _, e := range x {
			if e == needle || p.CI && strings.EqualFold(e, needle) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok && (s == needle || p.CI && strings.EqualFold(s, needle)) {
				return true
			}
		}
	}
	return false
}

// containsFold reports whether lower-cased h contains lower, without
// allocating for short ASCII strings.
func containsFold(h, lower string) bool {
	if len(h) <= 256 {
		var buf [256]byte
		ascii := true
		for i := 0; i < len(h); i++ {
			c := h[i]
			if c >= 0x80 {
				ascii = false
				break
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf[i] = c
		}
		if ascii {
			return indexBytesString(buf[:len(h)], lower)
		}
	}
	return strings.Contains(strings.ToLower(h), lower)
}

func indexBytesString(h []byte, needle string) bool {
	n := len(needle)
	if n == 0 {
		return true
	}
	first := needle[0]
	for i := 0; i+n <= len(h); i++ {
		j := bytes.IndexByte(h[i:len(h)-n+1], first)
		if j < 0 {
			return false
		}
		i += j
		if string(h[i:i+n]) == needle {
			return true
		}
	}
	return false
}

// Page is one page of a query's result.
type Page struct {
	// Records are the page's records, projected by Select.
	Records []map[string]any `json:"records"`
	// Total counts every matching record, on every page.
	Total int `json:"total"`
	// Offset is the position of the page's first record among them.
	Offset int `json:"offset"`
	// NextCursor fetches the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// Run filters, sorts, pages and projects records. It never modifies
// them: the page holds new maps. Its cost is O(records × filter nodes) to
// filter plus, with Sort, O(matches × log(offset+limit)) to order.
func (q *Query) Run(records []map[string]any) Page {
	limit, offset := q.Limit, max(q.Offset, 0)
	if limit <= 0 {
		limit = DefaultPageSize
	}
	page := Page{Offset: offset, Records: []map[string]any{}}
	if len(q.Sort) == 0 {
		for _, r := range records {
			if q.Filter != nil && !q.Filter.Match(r) {
				continue
			}
			if page.Total >= offset && len(page.Records) < limit {
				page.Records = append(page.Records, q.project(r))
			}
			page.Total++
		}
	} else {
		// Keep the offset+limit first matches in a max-heap as the filter
		// runs: O(matches × log(offset+limit)), and no list of all matches.
		k := offset + limit
		if k < offset { // a hand-built query near the largest int
			k = math.MaxInt
		}
		less := func(a, b int) int { return q.order(records, a, b) }
		h := make([]int, 0, min(k, 1024))
		for i, r := range records {
			if q.Filter != nil && !q.Filter.Match(r) {
				continue
			}
			page.Total++
			if len(h) < k {
				h = append(h, i)
				up(h, len(h)-1, less)
			} else if less(i, h[0]) < 0 {
				h[0] = i
				down(h, 0, less)
			}
		}
		slices.SortFunc(h, less)
		if offset < len(h) {
			for _, i := range h[offset:] {
				page.Records = append(page.Records, q.project(records[i]))
			}
		}
	}
	if next := offset + len(page.Records); next < page.Total && len(page.Records) > 0 {
		page.NextCursor = q.makeCursor(next)
	}
	return page
}

func up(h []int, i int, less func(a, b int) int) {
	for i > 0 {
		p := (i - 1) / 2
		if less(h[i], h[p]) <= 0 {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func down(h []int, i int, less func(a, b int) int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		big := l
		if r := l + 1; r < len(h) && less(h[r], h[l]) > 0 {
			big = r
		}
		if less(h[big], h[i]) <= 0 {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}

// order compares records a and b by the sort keys, then by position, so
// the order is total and ties keep record order.
func (q *Query) order(records []map[string]any, a, b int) int {
	ra, rb := records[a], records[b]
	for _, k := range q.Sort {
		va, okA := ra[k.Field]
		vb, okB := rb[k.Field]
		if c := sortCompare(va, okA, vb, okB, k.Desc); c != 0 {
			return c
		}
	}
	return a - b
}

// sortRank orders types: numbers, NaN, strings, booleans, other values,
// then null and absent fields. The order of types is the same in either
// direction, so NaN, which compares with no number, follows every number
// whichever way they go.
func sortRank(v any, present bool) int {
	if !present {
		return 6
	}
	switch v.(type) {
	case nil:
		return 5
	case string:
		return 2
	case bool:
		return 3
	}
	if f, ok := number(v); ok {
		if math.IsNaN(f) {
			return 1
		}
		return 0
	}
	return 4
}

func sortCompare(a any, okA bool, b any, okB bool, desc bool) int {
	ra, rb := sortRank(a, okA), sortRank(b, okB)
	if ra != rb {
		return ra - rb
	}
	var c int
	switch ra {
	case 0, 2:
		c, _ = compare(a, b)
	case 3:
		ba, bb := a.(bool), b.(bool)
		switch {
		case !ba && bb:
			c = -1
		case ba && !bb:
			c = 1
		}
	}
	if desc {
		return -c
	}
	return c
}

// project returns a new map holding the selected fields of r that it has,
// or all of r when nothing is selected.
func (q *Query) project(r map[string]any) map[string]any {
	if q.Select == nil {
		return maps.Clone(r)
	}
	out := make(map[string]any, len(q.Select))
	for _, f := range q.Select {
		if v, ok := r[f]; ok {
			out[f] = v
		}
	}
	return out
}

// Match reports whether rec satisfies f; a nil filter matches everything.
func Match(f Filter, rec map[string]any) bool { return f == nil || f.Match(rec) }
