package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Default limits; each can be changed with WithLimits.
const (
	DefaultMaxDepth    = 8       // nesting of and/or/not, the root filter being depth 1
	DefaultMaxNodes    = 64      // filter nodes: predicates plus combinators
	DefaultMaxPageSize = 200     // largest limit
	DefaultPageSize    = 50      // limit when none is given
	DefaultMaxString   = 1024    // bytes in a field name, a string value or a cursor
	DefaultMaxIn       = 100     // values in an in / nin list
	DefaultMaxSelect   = 64      // fields in select
	DefaultMaxSort     = 8       // sort keys
	DefaultMaxOffset   = 1000000 // largest offset
)

// Limits bound a query. A zero field means its default.
type Limits struct {
	MaxDepth    int
	MaxNodes    int
	MaxPageSize int
	PageSize    int
	MaxString   int
	MaxIn       int
	MaxSelect   int
	MaxSort     int
	MaxOffset   int
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxNodes, DefaultMaxNodes)
	def(&l.MaxPageSize, DefaultMaxPageSize)
	def(&l.PageSize, DefaultPageSize)
	def(&l.MaxString, DefaultMaxString)
	def(&l.MaxIn, DefaultMaxIn)
	def(&l.MaxSelect, DefaultMaxSelect)
	def(&l.MaxSort, DefaultMaxSort)
	def(&l.MaxOffset, DefaultMaxOffset)
	if l.PageSize > l.MaxPageSize {
		l.PageSize = l.MaxPageSize
	}
	return l
}

// Option configures Parse and Schema.
type Option func(*config)

type config struct {
	limits Limits
	fields []string
}

// WithLimits replaces the default limits; zero fields keep their default.
func WithLimits(l Limits) Option { return func(c *config) { c.limits = l } }

// DefaultSelect is the projection of a query that gives no select: the
// calling tool decides it. Without it, such a query returns whole records.
func DefaultSelect(fields ...string) Option {
	return func(c *config) { c.fields = fields }
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	c.limits = c.limits.withDefaults()
	return c
}

// Op is a predicate's operator.
type Op string

// The operators.
const (
	OpEq       Op = "eq"
	OpNe       Op = "ne"
	OpLt       Op = "lt"
	OpLte      Op = "lte"
	OpGt       Op = "gt"
	OpGte      Op = "gte"
	OpIn       Op = "in"
	OpNin      Op = "nin"
	OpContains Op = "contains"
	OpExists   Op = "exists"
)

var ops = []Op{OpEq, OpNe, OpLt, OpLte, OpGt, OpGte, OpIn, OpNin, OpContains, OpExists}

// Filter is a node of a parsed filter: *Predicate, *And, *Or or *Not.
type Filter interface {
	// Match reports whether rec satisfies the filter.
	Match(rec map[string]any) bool
	isFilter()
}

// And matches when every filter matches; an empty And matches everything.
type And struct{ Filters []Filter }

// Or matches when any filter matches; an empty Or matches nothing.
type Or struct{ Filters []Filter }

// Not matches when its filter does not.
type Not struct{ Filter Filter }

// Predicate tests one field of a record.
type Predicate struct {
	Field string
	Op    Op
	// Value is the operand: a scalar (string, float64, bool or nil), a
	// []any of scalars for in and nin, a bool for exists.
	Value any
	// CI makes contains case-insensitive.
	CI bool

	lower string             // Value lower-cased, for CI contains
	set   map[scalarKey]bool // Value as a set, for in and nin
}

func (*And) isFilter()       {}
func (*Or) isFilter()        {}
func (*Not) isFilter()       {}
func (*Predicate) isFilter() {}

// SortKey orders by one field.
type SortKey struct {
	Field string `json:"field"`
	Desc  bool   `json:"desc,omitempty"`
}

// Query is a parsed query.
type Query struct {
	// Filter selects records; nil matches every record.
	Filter Filter
	// Select lists the fields returned; nil returns whole records.
	Select []string
	// Sort orders the matching records; ties keep record order.
	Sort []SortKey
	// Limit is the page size, Offset the number of matching records
	// skipped before the page.
	Limit, Offset int

	limits Limits
	fp     uint64
}

// ErrInvalid is matched by every parse error.
var ErrInvalid = errors.New("query: invalid query")

// Error is a query that cannot be parsed: where (a path into the
// arguments, like "filter.and[1].op") and why.
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "query: " + e.Msg
	}
	return "query: " + e.Path + ": " + e.Msg
}

// Is matches ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

func errf(path, format string, args ...any) *Error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Parse reads a query from tool arguments as decoded from JSON: the keys
// filter, select, sort, limit, offset and cursor. Other keys are left to
// the calling tool. Every limit broken, unknown key inside the query and
// operand of the wrong type is an *Error.
func Parse(args map[string]any, opts ...Option) (*Query, error) {
	c := newConfig(opts)
	p := parser{l: c.limits}
	q := &Query{Limit: c.limits.PageSize, limits: c.limits}
	var err error
	if v, ok := args["filter"]; ok && v != nil {
		if q.Filter, err = p.filter(v, "filter", 1); err != nil {
			return nil, err
		}
	}
	if v, ok := args["select"]; ok && v != nil {
		if q.Select, err = p.selection(v); err != nil {
			return nil, err
		}
	} else if c.fields != nil {
		q.Select = append([]string(nil), c.fields...)
	}
	if v, ok := args["sort"]; ok && v != nil {
		if q.Sort, err = p.sort(v); err != nil {
			return nil, err
		}
	}
	if v, ok := args["limit"]; ok && v != nil {
		if q.Limit, err = p.integer(v, "limit", 1, c.limits.MaxPageSize, "the maximum page size"); err != nil {
			return nil, err
		}
	}
	q.fp = q.fingerprint()
	off, hasOff := args["offset"]
	cur, hasCur := args["cursor"]
	hasOff, hasCur = hasOff && off != nil, hasCur && cur != nil
	switch {
	case hasOff && hasCur:
		return nil, errf("", "give offset or cursor, not both")
	case hasOff:
		if q.Offset, err = p.integer(off, "offset", 0, c.limits.MaxOffset, "the maximum offset"); err != nil {
			return nil, err
		}
	case hasCur:
		if q.Offset, err = p.cursor(cur, q.fp); err != nil {
			return nil, err
		}
	}
	return q, nil
}

type parser struct {
	l     Limits
	nodes int
}

func (p *parser) filter(v any, path string, depth int) (Filter, error) {
	if depth > p.l.MaxDepth {
		return nil, errf(path, "the filter nests deeper than %d levels", p.l.MaxDepth)
	}
	p.nodes++
	if p.nodes > p.l.MaxNodes {
		return nil, errf(path, "the filter has more than %d nodes", p.l.MaxNodes)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errf(path, "a filter must be an object, got %s", kind(v))
	}
	for _, comb := range []string{"and", "or", "not"} {
		sub, ok := m[comb]
		if !ok {
			continue
		}
		if len(m) != 1 {
			return nil, errf(path, "%q must be the only key of its object, found %s", comb, keyList(m))
		}
		if comb == "not" {
			f, err := p.filter(sub, path+".not", depth+1)
			if err != nil {
				return nil, err
			}
			return &Not{Filter: f}, nil
		}
		list, ok := sub.([]any)
		if !ok {
			return nil, errf(path+"."+comb, "must be an array of filters, got %s", kind(sub))
		}
		if len(list) > p.l.MaxNodes-p.nodes {
			return nil, errf(path+"."+comb, "the filter has more than %d nodes", p.l.MaxNodes)
		}
		fs := make([]Filter, len(list))
		for i, s := range list {
			f, err := p.filter(s, fmt.Sprintf("%s.%s[%d]", path, comb, i), depth+1)
			if err != nil {
				return nil, err
			}
			fs[i] = f
		}
		if comb == "and" {
			return &And{Filters: fs}, nil
		}
		return &Or{Filters: fs}, nil
	}
	return p.predicate(m, path)
}

func (p *parser) predicate(m map[string]any, path string) (*Predicate, error) {
	for k := range m {
		switch k {
		case "field", "op", "value", "ci":
		default:
			return nil, errf(path, "unknown key %q; a filter is {\"field\", \"op\", \"value\"} or one of \"and\", \"or\", \"not\"", clip(k, 64))
		}
	}
	fv, ok := m["field"]
	if !ok {
		return nil, errf(path, "a filter needs \"field\", \"op\" and \"value\", or one of \"and\", \"or\", \"not\"")
	}
	field, err := p.name(fv, path+".field")
	if err != nil {
		return nil, err
	}
	ov, ok := m["op"]
	if !ok {
		return nil, errf(path, "missing \"op\"; ops are %s", opList())
	}
	os, ok := ov.(string)
	if !ok {
		return nil, errf(path+".op", "must be a string, got %s", kind(ov))
	}
	op := Op(os)
	known := false
	for _, o := range ops {
		known = known || o == op
	}
	if !known {
		return nil, errf(path+".op", "unknown op %q; ops are %s", clip(os, 64), opList())
	}
	pr := &Predicate{Field: field, Op: op}
	if ci, ok := m["ci"]; ok {
		b, isBool := ci.(bool)
		if !isBool {
			return nil, errf(path+".ci", "must be a boolean, got %s", kind(ci))
		}
		if op != OpContains {
			return nil, errf(path+".ci", "applies only to contains, not %s", op)
		}
		pr.CI = b
	}
	val, ok := m["value"]
	if !ok {
		return nil, errf(path, "%s needs a \"value\"", op)
	}
	vpath := path + ".value"
	switch op {
	case OpEq, OpNe:
		if pr.Value, err = p.scalar(val, vpath); err != nil {
			return nil, errf(vpath, "%s compares scalars: %s", op, err.(*Error).Msg)
		}
	case OpLt, OpLte, OpGt, OpGte:
		s, err := p.scalar(val, vpath)
		if err != nil {
			return nil, errf(vpath, "%s needs a number or a string: %s", op, err.(*Error).Msg)
		}
		switch s.(type) {
		case float64, string:
		default:
			return nil, errf(vpath, "%s needs a number or a string, got %s", op, kind(val))
		}
		pr.Value = s
	case OpIn, OpNin:
		list, ok := val.([]any)
		if !ok {
			return nil, errf(vpath, "%s needs an array of scalars, got %s", op, kind(val))
		}
		if len(list) > p.l.MaxIn {
			return nil, errf(vpath, "%s lists %d values; the limit is %d", op, len(list), p.l.MaxIn)
		}
		vals := make([]any, len(list))
		pr.set = make(map[scalarKey]bool, len(list))
		for i, e := range list {
			s, err := p.scalar(e, fmt.Sprintf("%s[%d]", vpath, i))
			if err != nil {
				return nil, err
			}
			vals[i] = s
			k, _ := keyOf(s)
			pr.set[k] = true
		}
		pr.Value = vals
	case OpContains:
		s, ok := val.(string)
		if !ok {
			return nil, errf(vpath, "contains needs a string, got %s", kind(val))
		}
		if len(s) > p.l.MaxString {
			return nil, errf(vpath, "the string is %d bytes long; the limit is %d", len(s), p.l.MaxString)
		}
		pr.Value = s
		pr.lower = strings.ToLower(s)
	case OpExists:
		b, ok := val.(bool)
		if !ok {
			return nil, errf(vpath, "exists needs true or false, got %s", kind(val))
		}
		pr.Value = b
	}
	return pr, nil
}

// name reads a field name: a plain key, never a path.
func (p *parser) name(v any, path string) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", errf(path, "a field name must be a string, got %s", kind(v))
	}
	if s == "" {
		return "", errf(path, "a field name must not be empty")
	}
	if len(s) > p.l.MaxString {
		return "", errf(path, "the field name is %d bytes long; the limit is %d", len(s), p.l.MaxString)
	}
	return s, nil
}

// scalar reads a string, a finite number (as float64), a boolean or null.
func (p *parser) scalar(v any, path string) (any, error) {
	switch x := v.(type) {
	case nil, bool:
		return x, nil
	case string:
		if len(x) > p.l.MaxString {
			return nil, errf(path, "the string is %d bytes long; the limit is %d", len(x), p.l.MaxString)
		}
		return x, nil
	}
	if f, ok := number(v); ok {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errf(path, "the number is not finite")
		}
		return f, nil
	}
	return nil, errf(path, "value must be a string, number, boolean or null, got %s", kind(v))
}

func (p *parser) selection(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, errf("select", "must be an array of field names, got %s", kind(v))
	}
	if len(list) > p.l.MaxSelect {
		return nil, errf("select", "lists %d fields; the limit is %d", len(list), p.l.MaxSelect)
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, err := p.name(e, fmt.Sprintf("select[%d]", i))
		if err != nil {
			return nil, err
		}
		dup := false
		for _, o := range out {
			dup = dup || o == s
		}
		if !dup {
			out = append(out, s)
		}
	}
	return out, nil
}

func (p *parser) sort(v any) ([]SortKey, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, errf("sort", "must be an array of {\"field\", \"desc\"} objects, got %s", kind(v))
	}
	if len(list) > p.l.MaxSort {
		return nil, errf("sort", "has %d keys; the limit is %d", len(list), p.l.MaxSort)
	}
	out := make([]SortKey, 0, len(list))
	for i, e := range list {
		path := fmt.Sprintf("sort[%d]", i)
		m, ok := e.(map[string]any)
		if !ok {
			return nil, errf(path, "must be an object {\"field\", \"desc\"}, got %s", kind(e))
		}
		for k := range m {
			if k != "field" && k != "desc" {
				return nil, errf(path, "unknown key %q; a sort key is {\"field\", \"desc\"}", clip(k, 64))
			}
		}
		f, ok := m["field"]
		if !ok {
			return nil, errf(path, "missing \"field\"")
		}
		name, err := p.name(f, path+".field")
		if err != nil {
			return nil, err
		}
		k := SortKey{Field: name}
		if d, ok := m["desc"]; ok {
			if k.Desc, ok = d.(bool); !ok {
				return nil, errf(path+".desc", "must be a boolean, got %s", kind(d))
			}
		}
		for _, o := range out {
			if o.Field == name {
				return nil, errf(path, "field %q is sorted on twice", clip(name, 64))
			}
		}
		out = append(out, k)
	}
	return out, nil
}

func (p *parser) integer(v any, path string, lo, hi int, what string) (int, error) {
	f, ok := number(v)
	if !ok || f != math.Trunc(f) || math.IsInf(f, 0) {
		return 0, errf(path, "must be a whole number, got %s", kind(v))
	}
	if f < float64(lo) {
		return 0, errf(path, "must be at least %d, got %v", lo, f)
	}
	// float64(hi) may round above hi (it does for the largest int), so a
	// number equal to it is checked to convert without wrapping round.
	if f > float64(hi) || f >= math.MaxInt64 {
		return 0, errf(path, "%v is over %s, %d", f, what, hi)
	}
	return int(f), nil
}

// number reads the numeric types JSON decoding and Go callers produce.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float32:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		if _, ok := number(x); ok {
			return "a number"
		}
	}
	return fmt.Sprintf("a %T", v)
}

func keyList(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	more := len(keys) > 8
	if more {
		keys = keys[:8]
	}
	for i, k := range keys {
		keys[i] = fmt.Sprintf("%q", clip(k, 32))
	}
	if more {
		keys = append(keys, "...")
	}
	return strings.Join(keys, ", ")
}

func opList() string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

// clip shortens s for an error message, so a huge key is never echoed.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
