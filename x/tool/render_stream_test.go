package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// bigRows is about size bytes of JSON as a tool typically returns it: a
// slice of rows, each a map; it also returns the length of the largest row.
func bigRows(size int) ([]any, int) {
	var rows []any
	largest := 0
	for n := 0; n < size; {
		r := map[string]any{"id": len(rows), "name": fmt.Sprint("customer ", len(rows)), "email": "someone@example.com", "note": strings.Repeat("é", len(rows)%40), "active": len(rows)%3 == 0}
		j, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		l := len(j) + 1
		largest = max(largest, l)
		n += l
		rows = append(rows, r)
	}
	return rows, largest
}

func bigStrings(size int) ([]any, int) {
	var items []any
	for n := 0; n < size; n += 101 {
		items = append(items, fmt.Sprintf("%099d", n))
	}
	return items, 101
}

func valueFixture(t testing.TB, v any) tool.Registry {
	reg := tool.NewRegistry()
	if err := reg.Register(tool.Tool{Name: "dump"}, func(context.Context, tool.Sandbox, map[string]any) (any, error) { return v, nil }); err != nil {
		t.Fatal(err)
	}
	return reg
}

// A 10 MB result renders in memory near what the model sees and Full may
// keep, not near its own size.
func TestLargeResultRendersNearBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what it holds, and encoding/json allocates per leaf without it")
	}
	rows, largestRow := bigRows(10 << 20)
	items, largestItem := bigStrings(10 << 20)
	cases := []struct {
		name      string
		v         any
		largest   int
		fullLimit int
	}{
		{"rows, default full limit", rows, largestRow, 0},
		{"rows, full limit at the budget", rows, largestRow, xtool.DefaultBudgetBytes},
		{"strings, default full limit", items, largestItem, 0},
		{"strings, full limit at the budget", items, largestItem, xtool.DefaultBudgetBytes},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := xtool.NewHandler(valueFixture(t, c.v), xtool.WithMaxFullBytes(c.fullLimit))
			keep := c.fullLimit
			if keep == 0 {
				keep = xtool.DefaultMaxFullBytes
			}
			h.Execute(context.Background(), call("dump", "{}")) // warm pools
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res := h.Execute(context.Background(), call("dump", "{}"))
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			// What it keeps while it may still keep Full (with its growth),
			// then what the model is shown, and the largest element.
			if limit := uint64(4*max(xtool.DefaultBudgetBytes, keep) + c.largest); allocated > limit {
				t.Fatalf("rendering allocated %d bytes; want at most %d", allocated, limit)
			}
			if res.IsError || !res.Truncated || res.Full != "" || len(res.Content) > xtool.DefaultBudgetBytes+400 {
				t.Fatalf("IsError %v Truncated %v, Full %d bytes, Content %d bytes", res.IsError, res.Truncated, len(res.Full), len(res.Content))
			}
		})
	}
}

// Full keeps a cut result up to the handler's limit; past it Full is
// empty and the marker tells the model the whole was not kept.
func TestFullLimit(t *testing.T) {
	// cut is what the model sees of s with a budget of 1000 bytes.
	cut := func(s string, kept bool) string {
		where := "the application keeps the whole result"
		if !kept {
			where = "the whole result was too large to keep"
		}
		return s[:500] + fmt.Sprintf("\n[… lode cut %d of %d bytes (0 of 1 lines) here to fit the result budget; %s — call the tool again with narrower arguments to see this part …]\n", len(s)-1000, len(s), where) + s[len(s)-500:]
	}
	text := strings.Repeat("a", 1500) + strings.Repeat("b", 1500)
	list := []any{strings.Repeat("a", 1500), strings.Repeat("b", 1500)}
	listJSON := `["` + list[0].(string) + `","` + list[1].(string) + `"]`
	cases := []struct {
		name      string
		v         any
		fullLimit int
		content   string
		full      string
	}{
		{"text under the default", text, 0, cut(text, true), text},
		{"text at the limit", text, 3000, cut(text, true), text},
		{"text over the limit", text, 2999, cut(text, false), ""},
		{"text with no limit", text, -1, cut(text, true), text},
		{"list under the default", list, 0, cut(listJSON, true), listJSON},
		{"list at the limit", list, 3007, cut(listJSON, true), listJSON},
		{"list over the limit", list, 3006, cut(listJSON, false), ""},
		{"list far over the limit", list, 100, cut(listJSON, false), ""},
		{"list with no limit", list, -1, cut(listJSON, true), listJSON},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := xtool.NewHandler(valueFixture(t, c.v), xtool.WithBudget(tool.Budget{Bytes: 1000}), xtool.WithMaxFullBytes(c.fullLimit))
			res := h.Execute(context.Background(), call("dump", "{}"))
			if res.IsError || !res.Truncated || res.Content != c.content || res.Full != c.full {
				t.Fatalf("IsError %v Truncated %v\ncontent %q\nwant    %q\nfull %d bytes, want %d", res.IsError, res.Truncated, res.Content, c.content, len(res.Full), len(c.full))
			}
			if fmt.Sprint(res.Value) != fmt.Sprint(c.v) {
				t.Fatal("Value is not what the tool returned")
			}
		})
	}
}

// BenchmarkRender10MB is one call whose tool returns 10 MB of rows: the
// time and memory it takes to show the model its budget of them.
func BenchmarkRender10MB(b *testing.B) {
	rows, _ := bigRows(10 << 20)
	h := xtool.NewHandler(valueFixture(b, rows))
	c := call("dump", "{}")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res := h.Execute(ctx, c); !res.Truncated {
			b.Fatal("not cut")
		}
	}
}
