package tool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

type addIn struct {
	A     int    `json:"a"`
	B     int    `json:"b"`
	Label string `json:"label"`
}

type addOut struct {
	Sum   int    `json:"sum"`
	Label string `json:"label"`
}

const addArgs = `{"a":40,"b":2,"label":"answer"}`

func addFn(_ context.Context, in addIn) (addOut, error) {
	return addOut{Sum: in.A + in.B, Label: in.Label}, nil
}

// addDispatch returns one call of the add tool through a Handler, the
// measured side of the dispatch ratio.
func addDispatch(tb testing.TB) func() {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "add", "Add a and b", addFn); err != nil {
		tb.Fatal(err)
	}
	h := xtool.NewHandler(reg)
	c := artifact.ToolCall{ID: "c1", Name: "add", Arguments: addArgs}
	e := loop.EmitterFunc(func(context.Context, loop.Event) {})
	ctx := context.Background()
	return func() {
		if err := h.Handle(ctx, c, e); err != nil {
			tb.Fatal(err)
		}
	}
}

// addBaseline is the floor the ratio divides by: decoding the same
// arguments and encoding the same result with encoding/json.
func addBaseline(tb testing.TB) func() {
	raw := []byte(addArgs)
	ctx := context.Background()
	return func() {
		var in addIn
		if err := json.Unmarshal(raw, &in); err != nil {
			tb.Fatal(err)
		}
		out, _ := addFn(ctx, in)
		if _, err := json.Marshal(out); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkDispatchAdd is the side-by-side pair of issue 14: the add tool
// through the Handler, and the bare JSON baseline.
func BenchmarkDispatchAdd(b *testing.B) {
	for _, bc := range []struct {
		name string
		mk   func(testing.TB) func()
	}{{"handler", addDispatch}, {"json-baseline", addBaseline}} {
		b.Run(bc.name, func(b *testing.B) {
			f := bc.mk(b)
			b.ReportAllocs()
			for b.Loop() {
				f()
			}
		})
	}
}
