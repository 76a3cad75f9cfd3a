package query_test

import (
	"encoding/json"
	"fmt"

	"github.com/lodeworks/lode/x/tool/query"
)

// A read tool parses its arguments as a query and runs it over records.
func Example() {
	records := []map[string]any{
		{"id": "LOC-1", "title": "Crash on start", "state": "open", "labels": []any{"bug"}, "priority": 1},
		{"id": "LOC-2", "title": "Dark mode", "state": "open", "labels": []any{"feature"}, "priority": 3},
		{"id": "LOC-3", "title": "Typo in docs", "state": "done", "labels": []any{"Bug"}, "priority": 2},
		{"id": "LOC-4", "title": "Slow search", "state": "open", "labels": []any{"BUG", "perf"}},
	}
	var args map[string]any
	_ = json.Unmarshal([]byte(`{
		"filter": {"and": [
			{"field": "state", "op": "eq", "value": "open"},
			{"field": "labels", "op": "contains", "value": "bug", "ci": true}
		]},
		"sort": [{"field": "priority"}],
		"limit": 1
	}`), &args)

	q, err := query.Parse(args, query.DefaultSelect("id", "title"))
	if err != nil {
		fmt.Println(err)
		return
	}
	page := q.Run(records)
	fmt.Println(page.Total, page.Records, page.NextCursor != "")

	// Limits are errors, not truncations.
	_, err = query.Parse(map[string]any{"limit": 1000})
	fmt.Println(err)
	// Output:
	// 2 [map[id:LOC-1 title:Crash on start]] true
	// query: limit: 1000 is over the maximum page size, 200
}
