package query_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/tool/query"
)

func args(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return m
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("x", 1025)
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	tests := []struct {
		name, args, want string
	}{
		{"filter not an object", `{"filter": "state=open"}`, `query: filter: a filter must be an object, got a string`},
		{"empty filter object", `{"filter": {}}`, `query: filter: a filter needs "field", "op" and "value", or one of "and", "or", "not"`},
		{"unknown key", `{"filter": {"field": "a", "op": "eq", "value": 1, "regex": "x"}}`, `query: filter: unknown key "regex"; a filter is {"field", "op", "value"} or one of "and", "or", "not"`},
		{"unknown op", `{"filter": {"field": "a", "op": "matches", "value": "x"}}`, `query: filter.op: unknown op "matches"; ops are eq, ne, lt, lte, gt, gte, in, nin, contains, exists`},
		{"op not a string", `{"filter": {"field": "a", "op": 1, "value": "x"}}`, `query: filter.op: must be a string, got a number`},
		{"missing op", `{"filter": {"field": "a", "value": "x"}}`, `query: filter: missing "op"; ops are eq, ne, lt, lte, gt, gte, in, nin, contains, exists`},
		{"missing value", `{"filter": {"field": "a", "op": "eq"}}`, `query: filter: eq needs a "value"`},
		{"field not a string", `{"filter": {"field": ["a"], "op": "eq", "value": 1}}`, `query: filter.field: a field name must be a string, got an array`},
		{"empty field", `{"filter": {"field": "", "op": "eq", "value": 1}}`, `query: filter.field: a field name must not be empty`},
		{"long field", `{"filter": {"field": "` + long + `", "op": "eq", "value": 1}}`, `query: filter.field: the field name is 1025 bytes long; the limit is 1024`},
		{"eq array", `{"filter": {"field": "a", "op": "eq", "value": [1]}}`, `query: filter.value: eq compares scalars: value must be a string, number, boolean or null, got an array`},
		{"ne object", `{"filter": {"field": "a", "op": "ne", "value": {}}}`, `query: filter.value: ne compares scalars: value must be a string, number, boolean or null, got an object`},
		{"eq long string", `{"filter": {"field": "a", "op": "eq", "value": "` + long + `"}}`, `query: filter.value: eq compares scalars: the string is 1025 bytes long; the limit is 1024`},
		{"lt bool", `{"filter": {"field": "a", "op": "lt", "value": true}}`, `query: filter.value: lt needs a number or a string, got a boolean`},
		{"gte null", `{"filter": {"field": "a", "op": "gte", "value": null}}`, `query: filter.value: gte needs a number or a string, got null`},
		{"in scalar", `{"filter": {"field": "a", "op": "in", "value": "x"}}`, `query: filter.value: in needs an array of scalars, got a string`},
		{"in nested", `{"filter": {"field": "a", "op": "nin", "value": [1, [2]]}}`, `query: filter.value[1]: value must be a string, number, boolean or null, got an array`},
		{"in too long", `{"filter": {"field": "a", "op": "in", "value": ["` + strings.Join(many, `","`) + `"]}}`, `query: filter.value: in lists 101 values; the limit is 100`},
		{"in long string", `{"filter": {"field": "a", "op": "in", "value": ["` + long + `"]}}`, `query: filter.value[0]: the string is 1025 bytes long; the limit is 1024`},
		{"contains number", `{"filter": {"field": "a", "op": "contains", "value": 3}}`, `query: filter.value: contains needs a string, got a number`},
		{"contains long", `{"filter": {"field": "a", "op": "contains", "value": "` + long + `"}}`, `query: filter.value: the string is 1025 bytes long; the limit is 1024`},
		{"ci not bool", `{"filter": {"field": "a", "op": "contains", "value": "x", "ci": "yes"}}`, `query: filter.ci: must be a boolean, got a string`},
		{"ci on eq", `{"filter": {"field": "a", "op": "eq", "value": "x", "ci": true}}`, `query: filter.ci: applies only to contains, not eq`},
		{"exists string", `{"filter": {"field": "a", "op": "exists", "value": "yes"}}`, `query: filter.value: exists needs true or false, got a string`},
		{"and not array", `{"filter": {"and": {"field": "a", "op": "eq", "value": 1}}}`, `query: filter.and: must be an array of filters, got an object`},
		{"and with extra key", `{"filter": {"and": [], "field": "a"}}`, `query: filter: "and" must be the only key of its object, found "and", "field"`},
		{"not not object", `{"filter": {"not": [1]}}`, `query: filter.not: a filter must be an object, got an array`},
		{"bad child path", `{"filter": {"or": [{"field": "a", "op": "eq", "value": 1}, {"and": [{"field": "b", "op": "in", "value": 2}]}]}}`, `query: filter.or[1].and[0].value: in needs an array of scalars, got a number`},
		{"too deep", `{"filter": ` + strings.Repeat(`{"not": `, 8) + `{"field": "a", "op": "exists", "value": true}` + strings.Repeat(`}`, 8) + `}`, `query: filter.not.not.not.not.not.not.not.not: the filter nests deeper than 8 levels`},
		{"too wide", `{"filter": {"or": [` + strings.TrimSuffix(strings.Repeat(`{"field": "a", "op": "exists", "value": true},`, 64), ",") + `]}}`, `query: filter.or: the filter has more than 64 nodes`},
		{"select not array", `{"select": "id"}`, `query: select: must be an array of field names, got a string`},
		{"select number", `{"select": ["id", 2]}`, `query: select[1]: a field name must be a string, got a number`},
		{"select too many", `{"select": ["` + strings.Join(many[:65], `","`) + `"]}`, `query: select: lists 65 fields; the limit is 64`},
		{"sort not array", `{"sort": {"field": "id"}}`, `query: sort: must be an array of {"field", "desc"} objects, got an object`},
		{"sort string", `{"sort": ["id"]}`, `query: sort[0]: must be an object {"field", "desc"}, got a string`},
		{"sort unknown key", `{"sort": [{"field": "id", "order": "desc"}]}`, `query: sort[0]: unknown key "order"; a sort key is {"field", "desc"}`},
		{"sort no field", `{"sort": [{"desc": true}]}`, `query: sort[0]: missing "field"`},
		{"sort desc string", `{"sort": [{"field": "id", "desc": "yes"}]}`, `query: sort[0].desc: must be a boolean, got a string`},
		{"sort twice", `{"sort": [{"field": "id"}, {"field": "id", "desc": true}]}`, `query: sort[1]: field "id" is sorted on twice`},
		{"sort too many", `{"sort": [` + strings.TrimSuffix(strings.Repeat(`{"field": "x"},`, 9), ",") + `]}`, `query: sort: has 9 keys; the limit is 8`},
		{"limit zero", `{"limit": 0}`, `query: limit: must be at least 1, got 0`},
		{"limit fraction", `{"limit": 2.5}`, `query: limit: must be a whole number, got a number`},
		{"limit string", `{"limit": "10"}`, `query: limit: must be a whole number, got a string`},
		{"limit over max", `{"limit": 201}`, `query: limit: 201 is over the maximum page size, 200`},
		{"offset negative", `{"offset": -1}`, `query: offset: must be at least 0, got -1`},
		{"offset huge", `{"offset": 1e300}`, `query: offset: 1e+300 is over the maximum offset, 1000000`},
		{"offset and cursor", `{"offset": 1, "cursor": "x"}`, `query: give offset or cursor, not both`},
		{"cursor garbage", `{"cursor": "not-a-cursor"}`, `query: cursor: not a cursor this tool made; pass the next_cursor of a previous result, or omit it`},
		{"cursor number", `{"cursor": 5}`, `query: cursor: must be a string, got a number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := query.Parse(args(t, tc.args))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant  %s", err, tc.want)
			}
			if !errors.Is(err, query.ErrInvalid) {
				t.Errorf("errors.Is(err, ErrInvalid) = false")
			}
			var qe *query.Error
			if !errors.As(err, &qe) {
				t.Errorf("not an *Error")
			}
			if q != nil {
				t.Errorf("query returned with an error")
			}
		})
	}
}

// Limits a tool sets replace the defaults.
func TestParseLimits(t *testing.T) {
	opt := query.WithLimits(query.Limits{MaxDepth: 2, MaxNodes: 3, MaxPageSize: 10, PageSize: 20, MaxString: 4, MaxIn: 1, MaxSelect: 1, MaxSort: 1, MaxOffset: 5})
	tests := []struct{ args, want string }{
		{`{"filter": {"not": {"not": {"field": "a", "op": "exists", "value": true}}}}`, `query: filter.not.not: the filter nests deeper than 2 levels`},
		{`{"filter": {"and": [{"field": "a", "op": "exists", "value": true}, {"field": "a", "op": "exists", "value": true}, {"field": "a", "op": "exists", "value": true}]}}`, `query: filter.and: the filter has more than 3 nodes`},
		{`{"limit": 11}`, `query: limit: 11 is over the maximum page size, 10`},
		{`{"filter": {"field": "abcde", "op": "exists", "value": true}}`, `query: filter.field: the field name is 5 bytes long; the limit is 4`},
		{`{"filter": {"field": "a", "op": "in", "value": [1, 2]}}`, `query: filter.value: in lists 2 values; the limit is 1`},
		{`{"select": ["a", "b"]}`, `query: select: lists 2 fields; the limit is 1`},
		{`{"sort": [{"field": "a"}, {"field": "b"}]}`, `query: sort: has 2 keys; the limit is 1`},
		{`{"offset": 6}`, `query: offset: 6 is over the maximum offset, 5`},
	}
	for _, tc := range tests {
		if _, err := query.Parse(args(t, tc.args), opt); err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v\nwant %s", tc.args, err, tc.want)
		}
	}
	q, err := query.Parse(nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if q.Limit != 10 {
		t.Errorf("page size above the maximum = %d, want it capped to 10", q.Limit)
	}
	q, _ = query.Parse(nil)
	if q.Limit != query.DefaultPageSize || q.Offset != 0 || q.Filter != nil || q.Select != nil || q.Sort != nil {
		t.Errorf("empty query = %+v", q)
	}
}

// A hostile filter built in Go — far deeper or wider than JSON decoding
// would allow — is refused after a bounded walk.
func TestParseHostileShapes(t *testing.T) {
	var deep any = map[string]any{"field": "a", "op": "exists", "value": true}
	for range 20000 {
		deep = map[string]any{"not": deep}
	}
	_, err := query.Parse(map[string]any{"filter": deep})
	if err == nil || !strings.HasSuffix(err.Error(), "the filter nests deeper than 8 levels") {
		t.Errorf("deep: %v", err)
	}
	wide := make([]any, 100_000)
	for i := range wide {
		wide[i] = map[string]any{"field": "a", "op": "exists", "value": true}
	}
	_, err = query.Parse(map[string]any{"filter": map[string]any{"and": wide}})
	if err == nil || err.Error() != "query: filter.and: the filter has more than 64 nodes" {
		t.Errorf("wide: %v", err)
	}
	// Width spread over levels is caught by the node count.
	level := func(n int, child any) any {
		l := make([]any, n)
		for i := range l {
			l[i] = child
		}
		return map[string]any{"or": l}
	}
	var tree any = map[string]any{"field": "a", "op": "exists", "value": true}
	for range 6 {
		tree = level(10, tree)
	}
	_, err = query.Parse(map[string]any{"filter": tree})
	if err == nil || !strings.HasSuffix(err.Error(), "the filter has more than 64 nodes") {
		t.Errorf("bushy: %v", err)
	}
	// Go callers' numeric types and non-finite numbers.
	if _, err := query.Parse(map[string]any{"filter": map[string]any{"field": "a", "op": "eq", "value": math.NaN()}}); err == nil || err.Error() != "query: filter.value: eq compares scalars: the number is not finite" {
		t.Errorf("NaN: %v", err)
	}
	if _, err := query.Parse(map[string]any{"filter": map[string]any{"field": "a", "op": "eq", "value": struct{}{}}}); err == nil || err.Error() != "query: filter.value: eq compares scalars: value must be a string, number, boolean or null, got a struct {}" {
		t.Errorf("struct: %v", err)
	}
	q, err := query.Parse(map[string]any{"limit": int64(5), "offset": uint8(2), "filter": map[string]any{"field": "a", "op": "lt", "value": int32(3)}})
	if err != nil || q.Limit != 5 || q.Offset != 2 || q.Filter.(*query.Predicate).Value != 3.0 {
		t.Errorf("Go numbers: %+v, %v", q, err)
	}
}

var record = map[string]any{
	"id":     1,
	"title":  "Fix the Bug",
	"state":  "open",
	"n":      int(3),
	"f":      2.5,
	"labels": []any{"bug", "UI", 7},
	"tags":   []string{"Alpha"},
	"nul":    nil,
	"ok":     true,
	"obj":    map[string]any{"a": 1},
}

func TestMatch(t *testing.T) {
	tests := []struct {
		filter string
		want   bool
	}{
		// eq / ne
		{`{"field": "state", "op": "eq", "value": "open"}`, true},
		{`{"field": "state", "op": "eq", "value": "OPEN"}`, false},
		{`{"field": "n", "op": "eq", "value": 3}`, true},
		{`{"field": "n", "op": "eq", "value": 3.0}`, true},
		{`{"field": "n", "op": "eq", "value": "3"}`, false},
		{`{"field": "ok", "op": "eq", "value": 1}`, false},
		{`{"field": "ok", "op": "eq", "value": true}`, true},
		{`{"field": "nul", "op": "eq", "value": null}`, true},
		{`{"field": "state", "op": "eq", "value": null}`, false},
		{`{"field": "labels", "op": "eq", "value": "bug"}`, false},
		{`{"field": "obj", "op": "eq", "value": 1}`, false},
		{`{"field": "absent", "op": "eq", "value": null}`, false},
		{`{"field": "state", "op": "ne", "value": "closed"}`, true},
		{`{"field": "state", "op": "ne", "value": "open"}`, false},
		{`{"field": "n", "op": "ne", "value": "3"}`, true},
		{`{"field": "absent", "op": "ne", "value": "x"}`, false},
		// order
		{`{"field": "n", "op": "lt", "value": 4}`, true},
		{`{"field": "n", "op": "lt", "value": 3}`, false},
		{`{"field": "n", "op": "lte", "value": 3}`, true},
		{`{"field": "f", "op": "gt", "value": 2}`, true},
		{`{"field": "f", "op": "gte", "value": 2.5}`, true},
		{`{"field": "f", "op": "gt", "value": 2.5}`, false},
		{`{"field": "state", "op": "gt", "value": "closed"}`, true},
		{`{"field": "state", "op": "lt", "value": "closed"}`, false},
		{`{"field": "n", "op": "lt", "value": "9"}`, false},
		{`{"field": "n", "op": "gte", "value": "0"}`, false},
		{`{"field": "state", "op": "lt", "value": 100}`, false},
		{`{"field": "ok", "op": "gt", "value": 0}`, false},
		{`{"field": "nul", "op": "lt", "value": 1}`, false},
		{`{"field": "absent", "op": "lt", "value": 1}`, false},
		// in / nin
		{`{"field": "state", "op": "in", "value": ["closed", "open"]}`, true},
		{`{"field": "n", "op": "in", "value": ["3", 3]}`, true},
		{`{"field": "n", "op": "in", "value": ["3"]}`, false},
		{`{"field": "nul", "op": "in", "value": [null]}`, true},
		{`{"field": "ok", "op": "in", "value": [false]}`, false},
		{`{"field": "labels", "op": "in", "value": ["bug"]}`, false},
		{`{"field": "state", "op": "in", "value": []}`, false},
		{`{"field": "absent", "op": "in", "value": [null]}`, false},
		{`{"field": "state", "op": "nin", "value": ["closed"]}`, true},
		{`{"field": "state", "op": "nin", "value": ["open"]}`, false},
		{`{"field": "absent", "op": "nin", "value": ["open"]}`, false},
		// contains
		{`{"field": "title", "op": "contains", "value": "Bug"}`, true},
		{`{"field": "title", "op": "contains", "value": "bug"}`, false},
		{`{"field": "title", "op": "contains", "value": "bug", "ci": true}`, true},
		{`{"field": "title", "op": "contains", "value": "BUG", "ci": false}`, false},
		{`{"field": "title", "op": "contains", "value": ""}`, true},
		{`{"field": "labels", "op": "contains", "value": "bug"}`, true},
		{`{"field": "labels", "op": "contains", "value": "bu"}`, false},
		{`{"field": "labels", "op": "contains", "value": "ui", "ci": true}`, true},
		{`{"field": "labels", "op": "contains", "value": "7"}`, false},
		{`{"field": "tags", "op": "contains", "value": "alpha", "ci": true}`, true},
		{`{"field": "tags", "op": "contains", "value": "alpha"}`, false},
		{`{"field": "n", "op": "contains", "value": "3"}`, false},
		{`{"field": "absent", "op": "contains", "value": ""}`, false},
		// exists
		{`{"field": "state", "op": "exists", "value": true}`, true},
		{`{"field": "state", "op": "exists", "value": false}`, false},
		{`{"field": "nul", "op": "exists", "value": true}`, true},
		{`{"field": "absent", "op": "exists", "value": true}`, false},
		{`{"field": "absent", "op": "exists", "value": false}`, true},
		// combinators
		{`{"and": []}`, true},
		{`{"or": []}`, false},
		{`{"and": [{"field": "state", "op": "eq", "value": "open"}, {"field": "n", "op": "gt", "value": 2}]}`, true},
		{`{"and": [{"field": "state", "op": "eq", "value": "open"}, {"field": "n", "op": "gt", "value": 3}]}`, false},
		{`{"or": [{"field": "absent", "op": "eq", "value": 1}, {"field": "n", "op": "gt", "value": 2}]}`, true},
		{`{"not": {"field": "absent", "op": "eq", "value": 1}}`, true},
		{`{"not": {"or": [{"field": "state", "op": "eq", "value": "open"}]}}`, false},
	}
	for _, tc := range tests {
		q, err := query.Parse(map[string]any{"filter": args(t, tc.filter)})
		if err != nil {
			t.Fatalf("%s: %v", tc.filter, err)
		}
		if got := query.Match(q.Filter, record); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.filter, got, tc.want)
		}
	}
	if !query.Match(nil, record) {
		t.Error("nil filter does not match")
	}
}

// Filters built by hand, without Parse, evaluate the same way.
func TestMatchHandBuilt(t *testing.T) {
	tests := []struct {
		f    query.Filter
		want bool
	}{
		{&query.Predicate{Field: "title", Op: query.OpContains, Value: "BUG", CI: true}, true},
		{&query.Predicate{Field: "n", Op: query.OpIn, Value: []any{1, 3}}, true},
		{&query.Predicate{Field: "n", Op: query.OpNin, Value: []any{1, 3}}, false},
		{&query.Predicate{Field: "n", Op: query.OpExists, Value: "junk"}, false},
		{&query.Predicate{Field: "n", Op: "bogus", Value: 1}, false},
		{&query.Not{}, false},
	}
	for i, tc := range tests {
		if got := tc.f.Match(record); got != tc.want {
			t.Errorf("%d: %v, want %v", i, got, tc.want)
		}
	}
}

// NaN is incomparable: every ordered comparison and eq is false for it,
// ne true; in is false and nin true whatever the list. ±Inf are numbers
// like any other, larger or smaller than every finite one. A NaN inside a
// nested value is no scalar and changes nothing.
func TestMatchNonFinite(t *testing.T) {
	rec := map[string]any{
		"nan":    math.NaN(),
		"nan32":  float32(math.NaN()),
		"jnan":   json.Number("NaN"),
		"inf":    math.Inf(1),
		"ninf":   math.Inf(-1),
		"nested": []any{math.NaN(), "x"},
		"obj":    map[string]any{"v": math.NaN()},
	}
	tests := []struct {
		filter string
		want   bool
	}{
		{`{"field": "nan", "op": "lt", "value": 0}`, false},
		{`{"field": "nan", "op": "lte", "value": 0}`, false},
		{`{"field": "nan", "op": "gt", "value": 0}`, false},
		{`{"field": "nan", "op": "gte", "value": 0}`, false},
		{`{"field": "nan", "op": "lte", "value": 1e308}`, false},
		{`{"field": "nan", "op": "gte", "value": -1e308}`, false},
		{`{"field": "nan", "op": "lte", "value": "z"}`, false},
		{`{"field": "nan", "op": "eq", "value": 0}`, false},
		{`{"field": "nan", "op": "eq", "value": null}`, false},
		{`{"field": "nan", "op": "eq", "value": "NaN"}`, false},
		{`{"field": "nan", "op": "ne", "value": 0}`, true},
		{`{"field": "nan", "op": "ne", "value": "NaN"}`, true},
		{`{"field": "nan", "op": "in", "value": [0, 1, null, "NaN"]}`, false},
		{`{"field": "nan", "op": "nin", "value": [0, 1, null, "NaN"]}`, true},
		{`{"field": "nan", "op": "nin", "value": []}`, true},
		{`{"field": "nan", "op": "contains", "value": "NaN"}`, false},
		{`{"field": "nan", "op": "exists", "value": true}`, true},
		{`{"not": {"field": "nan", "op": "lte", "value": 0}}`, true},
		{`{"field": "nan32", "op": "lte", "value": 0}`, false},
		{`{"field": "nan32", "op": "gte", "value": 0}`, false},
		{`{"field": "nan32", "op": "ne", "value": 0}`, true},
		{`{"field": "jnan", "op": "lte", "value": 0}`, false},
		{`{"field": "jnan", "op": "gte", "value": 0}`, false},
		{`{"field": "jnan", "op": "eq", "value": 0}`, false},
		{`{"field": "inf", "op": "gt", "value": 1e308}`, true},
		{`{"field": "inf", "op": "gte", "value": 1e308}`, true},
		{`{"field": "inf", "op": "lt", "value": 1e308}`, false},
		{`{"field": "inf", "op": "eq", "value": 1e308}`, false},
		{`{"field": "inf", "op": "ne", "value": 1e308}`, true},
		{`{"field": "inf", "op": "in", "value": [1e308]}`, false},
		{`{"field": "ninf", "op": "lt", "value": -1e308}`, true},
		{`{"field": "ninf", "op": "gt", "value": -1e308}`, false},
		{`{"field": "ninf", "op": "lte", "value": "a"}`, false},
		{`{"field": "nested", "op": "contains", "value": "x"}`, true},
		{`{"field": "nested", "op": "eq", "value": 0}`, false},
		{`{"field": "nested", "op": "gte", "value": 0}`, false},
		{`{"field": "nested", "op": "ne", "value": 0}`, true},
		{`{"field": "obj", "op": "lte", "value": 0}`, false},
	}
	for _, tc := range tests {
		q, err := query.Parse(map[string]any{"filter": args(t, tc.filter)})
		if err != nil {
			t.Fatalf("%s: %v", tc.filter, err)
		}
		if got := query.Match(q.Filter, rec); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.filter, got, tc.want)
		}
	}
	// Built by hand, a NaN operand is incomparable too.
	for _, tc := range []struct {
		f    query.Filter
		want bool
	}{
		{&query.Predicate{Field: "nan", Op: query.OpEq, Value: math.NaN()}, false},
		{&query.Predicate{Field: "nan", Op: query.OpNe, Value: math.NaN()}, true},
		{&query.Predicate{Field: "inf", Op: query.OpLte, Value: math.NaN()}, false},
		{&query.Predicate{Field: "inf", Op: query.OpGte, Value: math.NaN()}, false},
		{&query.Predicate{Field: "inf", Op: query.OpEq, Value: math.Inf(1)}, true},
		{&query.Predicate{Field: "nan", Op: query.OpIn, Value: []any{math.NaN()}}, false},
		{&query.Predicate{Field: "nan", Op: query.OpNin, Value: []any{math.NaN()}}, true},
	} {
		if got := tc.f.Match(rec); got != tc.want {
			t.Errorf("%+v = %v, want %v", tc.f, got, tc.want)
		}
	}
}

// A query cannot carry a number JSON cannot hold: a non-finite operand is
// refused where it stands.
func TestParseNonFiniteOperand(t *testing.T) {
	for _, tc := range []struct {
		value any
		op    string
		want  string
	}{
		{math.NaN(), "eq", "query: filter.value: eq compares scalars: the number is not finite"},
		{math.Inf(1), "lte", "query: filter.value: lte needs a number or a string: the number is not finite"},
		{[]any{1.0, math.Inf(-1)}, "in", "query: filter.value[1]: the number is not finite"},
		{[]any{json.Number("NaN")}, "nin", "query: filter.value[0]: the number is not finite"},
	} {
		_, err := query.Parse(map[string]any{"filter": map[string]any{"field": "a", "op": tc.op, "value": tc.value}})
		if err == nil || err.Error() != tc.want || !errors.Is(err, query.ErrInvalid) {
			t.Errorf("%s %v: err = %v\nwant %s", tc.op, tc.value, err, tc.want)
		}
	}
}

// Sort is total with NaN present: NaN follows every number (±Inf
// included) in either direction, NaNs keep record order among themselves,
// and types keep their order: numbers, NaN, strings, booleans, other
// values, null, absent.
func TestRunSortNonFinite(t *testing.T) {
	data := recs(
		map[string]any{"id": "nan1", "p": math.NaN()},
		map[string]any{"id": "one", "p": 1},
		map[string]any{"id": "str", "p": "a"},
		map[string]any{"id": "inf", "p": math.Inf(1)},
		map[string]any{"id": "nan2", "p": float32(math.NaN())},
		map[string]any{"id": "ninf", "p": math.Inf(-1)},
		map[string]any{"id": "null", "p": nil},
		map[string]any{"id": "nan3", "p": json.Number("NaN")},
		map[string]any{"id": "zero", "p": -0.0},
		map[string]any{"id": "absent"},
	)
	tests := []struct {
		args string
		want []any
	}{
		{`{"sort": [{"field": "p"}]}`, []any{"ninf", "zero", "one", "inf", "nan1", "nan2", "nan3", "str", "null", "absent"}},
		{`{"sort": [{"field": "p", "desc": true}]}`, []any{"inf", "one", "zero", "ninf", "nan1", "nan2", "nan3", "str", "null", "absent"}},
		{`{"sort": [{"field": "p"}], "limit": 3, "offset": 3}`, []any{"inf", "nan1", "nan2"}},
		{`{"sort": [{"field": "p", "desc": true}], "limit": 2, "offset": 4}`, []any{"nan1", "nan2"}},
		{`{"filter": {"field": "p", "op": "gte", "value": 0}, "sort": [{"field": "p"}]}`, []any{"zero", "one", "inf"}},
		{`{"filter": {"field": "p", "op": "ne", "value": 1}, "sort": [{"field": "p"}], "limit": 5}`, []any{"ninf", "zero", "inf", "nan1", "nan2"}},
	}
	for _, tc := range tests {
		q, err := query.Parse(args(t, tc.args))
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		if got := ids(q.Run(data)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func recs(vals ...map[string]any) []map[string]any { return vals }

func ids(p query.Page) []any {
	out := make([]any, len(p.Records))
	for i, r := range p.Records {
		out[i] = r["id"]
	}
	return out
}

func TestRunSortAndPage(t *testing.T) {
	data := recs(
		map[string]any{"id": "a", "p": 2, "s": "x"},
		map[string]any{"id": "b", "p": "high"},
		map[string]any{"id": "c", "p": 1, "s": "y"},
		map[string]any{"id": "d"},
		map[string]any{"id": "e", "p": 2, "s": "w"},
		map[string]any{"id": "f", "p": nil},
		map[string]any{"id": "g", "p": true},
		map[string]any{"id": "h", "p": false},
		map[string]any{"id": "i", "p": []any{1}},
		map[string]any{"id": "j", "p": 1.5},
	)
	tests := []struct {
		args string
		want []any
		tot  int
	}{
		{`{}`, []any{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, 10},
		{`{"sort": [{"field": "p"}]}`, []any{"c", "j", "a", "e", "b", "h", "g", "i", "f", "d"}, 10},
		{`{"sort": [{"field": "p", "desc": true}]}`, []any{"a", "e", "j", "c", "b", "g", "h", "i", "f", "d"}, 10},
		{`{"sort": [{"field": "p", "desc": true}, {"field": "s"}]}`, []any{"e", "a", "j", "c", "b", "g", "h", "i", "f", "d"}, 10},
		{`{"sort": [{"field": "p"}], "limit": 3}`, []any{"c", "j", "a"}, 10},
		{`{"sort": [{"field": "p"}], "limit": 3, "offset": 2}`, []any{"a", "e", "b"}, 10},
		{`{"sort": [{"field": "p"}], "limit": 3, "offset": 9}`, []any{"d"}, 10},
		{`{"sort": [{"field": "p"}], "offset": 10}`, []any{}, 10},
		{`{"limit": 2, "offset": 3}`, []any{"d", "e"}, 10},
		{`{"offset": 50}`, []any{}, 10},
		{`{"filter": {"field": "p", "op": "gte", "value": 1.5}, "sort": [{"field": "id", "desc": true}]}`, []any{"j", "e", "a"}, 3},
		{`{"filter": {"field": "p", "op": "exists", "value": false}, "limit": 1}`, []any{"d"}, 1},
	}
	for _, tc := range tests {
		q, err := query.Parse(args(t, tc.args))
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		p := q.Run(data)
		if got := ids(p); !reflect.DeepEqual(got, tc.want) || p.Total != tc.tot {
			t.Errorf("%s = %v (total %d), want %v (total %d)", tc.args, got, p.Total, tc.want, tc.tot)
		}
	}
}

func TestRunProjection(t *testing.T) {
	data := recs(map[string]any{"id": 1, "title": "t", "body": "long"}, map[string]any{"id": 2})
	q, _ := query.Parse(args(t, `{"select": ["id", "title", "id"]}`))
	p := q.Run(data)
	if want := []map[string]any{{"id": 1, "title": "t"}, {"id": 2}}; !reflect.DeepEqual(p.Records, want) {
		t.Errorf("select = %v", p.Records)
	}
	q, _ = query.Parse(nil, query.DefaultSelect("title"))
	if p := q.Run(data); !reflect.DeepEqual(p.Records, []map[string]any{{"title": "t"}, {}}) {
		t.Errorf("default select = %v", p.Records)
	}
	q, _ = query.Parse(args(t, `{"select": ["body"]}`), query.DefaultSelect("title"))
	if p := q.Run(data); !reflect.DeepEqual(p.Records, []map[string]any{{"body": "long"}, {}}) {
		t.Errorf("select over default = %v", p.Records)
	}
	q, _ = query.Parse(nil)
	p = q.Run(data)
	p.Records[0]["id"] = 99
	if data[0]["id"] != 1 {
		t.Error("Run returned a record that aliases the input")
	}
}

func TestCursor(t *testing.T) {
	var data []map[string]any
	for i := range 7 {
		data = append(data, map[string]any{"id": i, "even": i%2 == 0})
	}
	base := `"filter": {"field": "id", "op": "gte", "value": 1}, "sort": [{"field": "id", "desc": true}], "limit": 2`
	q, err := query.Parse(args(t, `{`+base+`}`))
	if err != nil {
		t.Fatal(err)
	}
	var seen []any
	p := q.Run(data)
	for {
		seen = append(seen, ids(p)...)
		if p.NextCursor == "" {
			break
		}
		// The select and limit may change between pages; the filter and
		// sort may not.
		q, err = query.Parse(args(t, `{`+base+`, "select": ["id"], "cursor": "`+p.NextCursor+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		p = q.Run(data)
	}
	if want := []any{6, 5, 4, 3, 2, 1}; !reflect.DeepEqual(seen, want) {
		t.Errorf("paged = %v, want %v", seen, want)
	}

	first, _ := query.Parse(args(t, `{`+base+`}`))
	cur := first.Run(data).NextCursor
	_, err = query.Parse(args(t, `{"filter": {"field": "id", "op": "gte", "value": 2}, "cursor": "`+cur+`"}`))
	if err == nil || err.Error() != "query: cursor: the cursor was made for a different filter or sort; start again without it" {
		t.Errorf("foreign cursor: %v", err)
	}
	_, err = query.Parse(args(t, `{"filter": {"field": "id", "op": "gte", "value": 1}, "sort": [{"field": "id"}], "cursor": "`+cur+`"}`))
	if err == nil || !strings.Contains(err.Error(), "different filter or sort") {
		t.Errorf("cursor with another sort: %v", err)
	}
	for _, bad := range []string{"", "cTEu", "cTEuNS54eXo", "eDEuNS5hYmM", "cTEuLTEuMA"} {
		if _, err := query.Parse(map[string]any{"cursor": bad}); err == nil || !strings.Contains(err.Error(), "not a cursor this tool made") {
			t.Errorf("cursor %q: %v", bad, err)
		}
	}
	if _, err := query.Parse(map[string]any{"cursor": strings.Repeat("A", 2000)}); err == nil || !strings.Contains(err.Error(), "not a cursor this tool made") {
		t.Errorf("long cursor: %v", err)
	}
	// The last page has no cursor; neither has an empty one.
	q, _ = query.Parse(args(t, `{"offset": 7}`))
	if p := q.Run(data); p.NextCursor != "" || len(p.Records) != 0 {
		t.Errorf("past the end: %+v", p)
	}
}

// The bounded heap used for a small page gives exactly the stable sort.
func TestTopMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := []any{1, 2, 2.5, "a", "b", true, false, nil, []any{}, math.NaN(), math.Inf(1), math.Inf(-1)}
	for round := range 200 {
		n := rng.IntN(60)
		data := make([]map[string]any, n)
		for i := range data {
			r := map[string]any{"id": i}
			if rng.IntN(5) > 0 {
				r["k"] = vals[rng.IntN(len(vals))]
			}
			r["k2"] = rng.IntN(3)
			data[i] = r
		}
		desc := rng.IntN(2) == 0
		limit, offset := 1+rng.IntN(20), rng.IntN(30)
		q, err := query.Parse(map[string]any{
			"sort":   []any{map[string]any{"field": "k", "desc": desc}, map[string]any{"field": "k2"}},
			"limit":  float64(limit),
			"offset": float64(offset),
		})
		if err != nil {
			t.Fatal(err)
		}
		full, _ := query.Parse(map[string]any{
			"sort":  []any{map[string]any{"field": "k", "desc": desc}, map[string]any{"field": "k2"}},
			"limit": 200.0,
		})
		all := ids(full.Run(data))
		want := all[min(offset, len(all)):min(offset+limit, len(all))]
		if got := ids(q.Run(data)); !slices.Equal(got, want) {
			t.Fatalf("round %d (n=%d limit=%d offset=%d desc=%v): %v, want %v", round, n, limit, offset, desc, got, want)
		}
	}
}

func TestFilterJSONRoundTrip(t *testing.T) {
	src := `{"and":[{"ci":true,"field":"a","op":"contains","value":"x"},{"not":{"or":[{"field":"b","op":"in","value":[1,"two",null]}]}}]}`
	q, err := query.Parse(map[string]any{"filter": args(t, src)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(q.Filter)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != src {
		t.Errorf("Marshal = %s\nwant      %s", out, src)
	}
}

// A Query built by hand, with zero or out-of-range paging, still runs.
func TestRunHandBuiltQuery(t *testing.T) {
	data := recs(map[string]any{"id": 2}, map[string]any{"id": 1})
	for _, q := range []*query.Query{
		{Offset: -5, Sort: []query.SortKey{{Field: "id"}}},
		{Offset: -5},
		{Limit: -1, Sort: []query.SortKey{{Field: "id"}}},
	} {
		p := q.Run(data)
		if len(p.Records) != 2 || p.Total != 2 || p.Offset != 0 {
			t.Errorf("%+v: %+v", q, p)
		}
	}
	q := &query.Query{Sort: []query.SortKey{{Field: "id"}}, Limit: 1}
	if p := q.Run(data); !reflect.DeepEqual(ids(p), []any{1}) || p.NextCursor == "" {
		t.Errorf("hand-built page = %+v", p)
	}
	if p := (&query.Query{}).Run(nil); p.Records == nil || len(p.Records) != 0 || p.Total != 0 {
		t.Errorf("no records = %+v", p)
	}
	// An offset and a limit whose sum overflows an int: an empty page.
	for _, q := range []*query.Query{
		{Offset: math.MaxInt, Limit: 10, Sort: []query.SortKey{{Field: "id"}}},
		{Offset: math.MaxInt - 1, Limit: math.MaxInt, Sort: []query.SortKey{{Field: "id"}}},
		{Offset: math.MaxInt, Limit: math.MaxInt},
	} {
		p := q.Run(data)
		if len(p.Records) != 0 || p.Total != 2 || p.Offset != q.Offset || p.NextCursor != "" {
			t.Errorf("offset %d limit %d: %+v", q.Offset, q.Limit, p)
		}
	}
}

// Limits a tool raises to the largest int still parse model-given numbers
// into a usable query: a number at the top is refused, not wrapped round.
func TestParseHugeLimits(t *testing.T) {
	opt := query.WithLimits(query.Limits{MaxOffset: math.MaxInt, MaxPageSize: math.MaxInt})
	data := recs(map[string]any{"id": 2}, map[string]any{"id": 1})
	q, err := query.Parse(args(t, `{"offset": 9223372036854774784, "limit": 9223372036854774784, "sort": [{"field": "id"}]}`), opt)
	if err != nil {
		t.Fatal(err)
	}
	if p := q.Run(data); len(p.Records) != 0 || p.Total != 2 || p.Offset != 9223372036854774784 {
		t.Errorf("page = %+v", p)
	}
	for _, tc := range []struct{ args, want string }{
		{`{"offset": 9223372036854775807}`, "query: offset: 9.223372036854776e+18 is over the maximum offset, 9223372036854775807"},
		{`{"limit": 1e19}`, "query: limit: 1e+19 is over the maximum page size, 9223372036854775807"},
	} {
		if _, err := query.Parse(args(t, tc.args), opt); err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v\nwant %s", tc.args, err, tc.want)
		}
	}
}
