package tool_test

import (
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// FuzzExecute sends the Handler calls with any name, ID and arguments, to
// a registry holding a typed tool and a map tool, offered or not. Whatever
// comes in, Handle must not panic or fail, and must emit exactly one tool
// turn holding one result for the call's ID, in valid UTF-8, within the
// budget.
func FuzzExecute(f *testing.F) {
	reg := tool.NewRegistry()
	if err := tool.RegisterFunc(reg, "sum", "Add a and b", func(_ context.Context, in sumIn) (int, error) { return in.A + in.B, nil }); err != nil {
		f.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"s":{"type":"string","maxLength":8},"n":{"type":"integer"},"list":{"type":"array","items":{"type":"number"}}},"required":["s"]}`)
	if err := reg.Register(tool.Tool{Name: "echo", Schema: schema}, func(_ context.Context, _ tool.Sandbox, args map[string]any) (any, error) {
		return args, nil
	}); err != nil {
		f.Fatal(err)
	}
	budget := tool.Budget{Bytes: 512, Lines: 20}
	h := xtool.NewHandler(reg, xtool.WithBudget(budget))
	for _, seed := range []struct {
		id, name, args string
		offered        bool
	}{
		{"c1", "sum", `{"a":1,"b":2}`, false},
		{"c2", "sum", `{"a":"1"}`, true},
		{"c3", "echo", `{"s":"hi","n":3,"list":[1,2.5]}`, true},
		{"c4", "echo", `{"s":"much too long"}`, false},
		{"", "", "", false},
		{"c5", "nope", "null", true},
		{"c6", "echo", "[1,2]", false},
		{"c7", "sum\xff", "{\"a\":\x00}", false},
	} {
		f.Add(seed.id, seed.name, seed.args, seed.offered)
	}
	f.Fuzz(func(t *testing.T, id, name, args string, restrict bool) {
		ctx := context.Background()
		if restrict {
			ctx = xtool.WithOffered(ctx, reg.Tools()[:1]) // echo only
		}
		c := artifact.ToolCall{ID: id, Name: name, Arguments: args}
		var events []loop.Event
		e := loop.EmitterFunc(func(_ context.Context, ev loop.Event) { events = append(events, ev) })
		if err := h.Handle(ctx, c, e); err != nil {
			t.Fatalf("Handle failed: %v", err)
		}
		if len(events) != 1 {
			t.Fatalf("%d events, want 1", len(events))
		}
		tc, ok := events[0].(loop.TurnCompleteEvent)
		if !ok || tc.Role != ledger.RoleTool || len(tc.Artifacts) != 1 {
			t.Fatalf("emitted %#v, want one tool turn of one result", events[0])
		}
		r, ok := tc.Artifacts[0].(artifact.ToolResult)
		if !ok || r.ToolCallID != id || r.Name != name {
			t.Fatalf("result %#v does not answer call %q", tc.Artifacts[0], id)
		}
		if !utf8.ValidString(r.Content) {
			t.Fatalf("content is not valid UTF-8: %q", r.Content)
		}
		// The budget, plus the marker that says what was cut.
		if len(r.Content) > budget.Bytes+400 {
			t.Fatalf("content of %d bytes exceeds the budget", len(r.Content))
		}
		if !r.IsError && (name != "sum" && name != "echo" || restrict && name != "echo") {
			t.Fatalf("a call to %q succeeded: %q", name, r.Content)
		}
	})
}
