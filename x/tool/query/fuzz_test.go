package query_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lodeworks/lode/x/tool/query"
)

// measure returns a filter's depth and node count.
func measure(f query.Filter) (depth, nodes int) {
	switch x := f.(type) {
	case nil:
		return 0, 0
	case *query.Predicate:
		return 1, 1
	case *query.Not:
		d, n := measure(x.Filter)
		return d + 1, n + 1
	case *query.And:
		return measureList(x.Filters)
	case *query.Or:
		return measureList(x.Filters)
	}
	panic("unknown filter node")
}

func measureList(fs []query.Filter) (depth, nodes int) {
	for _, f := range fs {
		d, n := measure(f)
		depth, nodes = max(depth, d), nodes+n
	}
	return depth + 1, nodes + 1
}

// nonFinite turns the strings "NaN", "+Inf" and "-Inf" into those numbers,
// at any depth, so fuzzed records (JSON, which cannot hold them) carry
// them too.
func nonFinite(v any) any {
	switch x := v.(type) {
	case string:
		switch x {
		case "NaN":
			return math.NaN()
		case "+Inf":
			return math.Inf(1)
		case "-Inf":
			return math.Inf(-1)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = nonFinite(e)
		}
	case []any:
		for i, e := range x {
			x[i] = nonFinite(e)
		}
	}
	return v
}

func FuzzQuery(f *testing.F) {
	recs := `[{"id":1,"state":"open","labels":["bug","UI"],"n":3,"t":"Hello"},{"id":"2","n":null},{},{"n":[1,2],"state":{"x":1}},{"id":2.5,"ok":true,"t":"héllo WORLD"},{"id":"NaN","n":"NaN"},{"id":"+Inf","n":"-Inf","t":["NaN"]}]`
	seeds := []string{
		`{}`,
		`{"filter":{"field":"state","op":"eq","value":"open"},"sort":[{"field":"id","desc":true}],"limit":2}`,
		`{"filter":{"or":[{"field":"n","op":"gte","value":2},{"not":{"field":"id","op":"exists","value":true}}]},"select":["id"],"offset":1}`,
		`{"filter":{"field":"labels","op":"contains","value":"ui","ci":true}}`,
		`{"filter":{"field":"n","op":"in","value":[1,"3",null,true]}}`,
		`{"filter":{"field":"t","op":"nin","value":[]},"sort":[{"field":"t"},{"field":"n","desc":true}]}`,
		`{"filter":` + strings.Repeat(`{"not":`, 40) + `{"field":"a","op":"exists","value":false}` + strings.Repeat(`}`, 40) + `}`,
		`{"filter":{"and":[` + strings.TrimSuffix(strings.Repeat(`{"field":"a","op":"eq","value":1},`, 100), ",") + `]}}`,
		`{"filter":{"field":"` + strings.Repeat("f", 5000) + `","op":"contains","value":"` + strings.Repeat("v", 5000) + `"}}`,
		`{"filter":{"field":1,"op":[],"value":{}},"sort":"x","limit":-1,"cursor":7}`,
		`{"limit":1e308,"offset":-0.5}`,
		`{"cursor":"cTEuMi4w"}`,
		`{"filter":{"field":"n","op":"lte","value":3},"sort":[{"field":"n","desc":true}],"limit":2,"offset":1}`,
		`{"filter":{"field":"id","op":"nin","value":[1,"2"]},"sort":[{"field":"id"},{"field":"n"}],"limit":1,"offset":2}`,
	}
	for _, s := range seeds {
		f.Add(s, recs)
	}
	f.Add(`{"offset":9223372036854774784,"limit":9223372036854774784,"sort":[{"field":"id"}]}`, recs)
	huge := query.WithLimits(query.Limits{MaxOffset: math.MaxInt, MaxPageSize: math.MaxInt, PageSize: math.MaxInt})
	f.Fuzz(func(t *testing.T, queryJSON, recordsJSON string) {
		var args map[string]any
		if json.Unmarshal([]byte(queryJSON), &args) != nil {
			return
		}
		var records []map[string]any
		if json.Unmarshal([]byte(recordsJSON), &records) != nil {
			records = nil
		}
		for _, r := range records {
			nonFinite(r)
		}
		// Limits raised to the largest int must not let a number wrap round
		// or the paging overflow.
		if q, err := query.Parse(args, huge); err == nil {
			if p := q.Run(records); len(p.Records) > len(records) || q.Offset < 0 || q.Limit < 1 {
				t.Fatalf("with huge limits: offset %d limit %d, %d records", q.Offset, q.Limit, len(p.Records))
			}
		}
		q, err := query.Parse(args)
		if err != nil {
			if !errors.Is(err, query.ErrInvalid) {
				t.Fatalf("parse error is not ErrInvalid: %v", err)
			}
			if len(err.Error()) > 2*query.DefaultMaxString {
				t.Fatalf("error message of %d bytes", len(err.Error()))
			}
			return
		}
		// Bounded: the tree, the page and the projection are within the
		// limits, so evaluation is O(records × nodes).
		depth, nodes := measure(q.Filter)
		if depth > query.DefaultMaxDepth || nodes > query.DefaultMaxNodes {
			t.Fatalf("filter of depth %d and %d nodes passed", depth, nodes)
		}
		if q.Limit < 1 || q.Limit > query.DefaultMaxPageSize || q.Offset < 0 || q.Offset > query.DefaultMaxOffset {
			t.Fatalf("limit %d offset %d passed", q.Limit, q.Offset)
		}
		if len(q.Select) > query.DefaultMaxSelect || len(q.Sort) > query.DefaultMaxSort {
			t.Fatalf("select %d sort %d passed", len(q.Select), len(q.Sort))
		}
		p := q.Run(records)
		if len(p.Records) > q.Limit || p.Total > len(records) || p.Offset != q.Offset {
			t.Fatalf("page %d records, total %d of %d", len(p.Records), p.Total, len(records))
		}
		if again := q.Run(records); !samePage(again, p) || again.Total != p.Total || again.NextCursor != p.NextCursor {
			t.Fatalf("Run is not deterministic")
		}
		// The order is total: a page is the same slice of the whole sorted
		// result, whatever the page's bounds.
		if len(q.Sort) > 0 {
			all := *q
			all.Offset, all.Limit = 0, len(records)+1
			whole := all.Run(records).Records
			want := whole[min(q.Offset, len(whole)):min(q.Offset+q.Limit, len(whole))]
			if !samePage(query.Page{Records: want}, p) {
				t.Fatalf("page at offset %d, limit %d differs from the same slice of the whole sort", q.Offset, q.Limit)
			}
		}
		// The filter written back as JSON parses to one that matches the
		// same records.
		if q.Filter == nil {
			return
		}
		raw, err := json.Marshal(q.Filter)
		if err != nil {
			t.Fatalf("marshal filter: %v", err)
		}
		var back any
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		q2, err := query.Parse(map[string]any{"filter": back})
		if err != nil {
			t.Fatalf("re-parse %s: %v", raw, err)
		}
		for i, r := range records {
			if q.Filter.Match(r) != q2.Filter.Match(r) {
				t.Fatalf("record %d matches differently after a round trip through %s", i, raw)
			}
		}
	})
}

// samePage reports whether two pages hold the same records in the same
// order. Records are compared by their printed form, because a NaN makes
// reflect.DeepEqual report equal records as different.
func samePage(a, b query.Page) bool {
	if len(a.Records) != len(b.Records) {
		return false
	}
	for i := range a.Records {
		if fmt.Sprint(a.Records[i]) != fmt.Sprint(b.Records[i]) {
			return false
		}
	}
	return true
}
