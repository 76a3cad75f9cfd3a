package query_test

import (
	"fmt"
	"testing"

	"github.com/lodeworks/lode/x/tool/query"
)

// BenchmarkQuery: a filter of four predicates, a sort and a page of 50
// over 100,000 in-memory records.
//
//	go test -run '^$' -bench . -benchmem ./x/tool/query
func BenchmarkQuery(b *testing.B) {
	states := []string{"open", "in progress", "done", "canceled"}
	labels := [][]any{{"bug"}, {"feature"}, {"Bug", "ui"}, {}, {"docs", "BUG"}}
	records := make([]map[string]any, 100_000)
	for i := range records {
		records[i] = map[string]any{
			"id":        fmt.Sprintf("LOC-%d", i),
			"title":     fmt.Sprintf("Item number %d about the parser", i),
			"state":     states[i%len(states)],
			"stateType": "unstarted",
			"labels":    labels[i%len(labels)],
			"priority":  i % 5,
			"estimate":  float64(i%13) / 2,
		}
	}
	args := map[string]any{
		"filter": map[string]any{"and": []any{
			map[string]any{"field": "state", "op": "in", "value": []any{"open", "in progress"}},
			map[string]any{"field": "priority", "op": "lte", "value": 3.0},
			map[string]any{"field": "labels", "op": "contains", "value": "bug", "ci": true},
			map[string]any{"not": map[string]any{"field": "estimate", "op": "gt", "value": 5.0}},
		}},
		"sort":  []any{map[string]any{"field": "priority", "desc": true}, map[string]any{"field": "id"}},
		"limit": 50.0,
	}
	q, err := query.Parse(args, query.DefaultSelect("id", "title", "state", "stateType", "labels"))
	if err != nil {
		b.Fatal(err)
	}
	if p := q.Run(records); len(p.Records) != 50 || p.Total == 0 {
		b.Fatalf("page of %d, total %d", len(p.Records), p.Total)
	}
	b.ReportAllocs()
	for b.Loop() {
		q.Run(records)
	}
}
