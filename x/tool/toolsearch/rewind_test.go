package toolsearch_test

import (
	"maps"
	"testing"

	"github.com/lodeworks/lode/x/tool/toolsearch"
)

// TestRewind: keeping a thread's first n turns keeps the activations made
// before turn n, and only those.
func TestRewind(t *testing.T) {
	const two = `[{"tool":"a","at":2},{"tool":"b","at":6}]`
	tests := []struct {
		name string
		meta map[string]string
		n    int
		want map[string]string
	}{
		{"the later search goes", map[string]string{toolsearch.MetaKey: two, "x": "y"}, 5,
			map[string]string{toolsearch.MetaKey: `[{"tool":"a","at":2}]`, "x": "y"}},
		{"a search whose result is the last turn kept stays", map[string]string{toolsearch.MetaKey: two}, 7,
			map[string]string{toolsearch.MetaKey: two}},
		{"one at the cut goes", map[string]string{toolsearch.MetaKey: two}, 6,
			map[string]string{toolsearch.MetaKey: `[{"tool":"a","at":2}]`}},
		{"none left removes the record", map[string]string{toolsearch.MetaKey: two, "x": "y"}, 2,
			map[string]string{"x": "y"}},
		{"a damaged record is left as it is", map[string]string{toolsearch.MetaKey: "not json"}, 0,
			map[string]string{toolsearch.MetaKey: "not json"}},
		{"no record", map[string]string{"x": "y"}, 0, map[string]string{"x": "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			toolsearch.Rewind(tt.meta, tt.n)
			if !maps.Equal(tt.meta, tt.want) {
				t.Errorf("Rewind(%d) left %v, want %v", tt.n, tt.meta, tt.want)
			}
		})
	}
}
