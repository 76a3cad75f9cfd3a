package memory_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
	xtool "github.com/lodeworks/lode/x/tool"
)

// caller is a thread a door wrote id on.
func caller(id auth.Identity) ledger.State {
	return ledger.NewThread(ledger.WithMetadata(id.Metadata()))
}

func handler(t *testing.T, store memory.Store, opts ...memory.Option) *xtool.Handler {
	t.Helper()
	reg := tool.NewRegistry()
	if err := memory.Register(reg, store, opts...); err != nil {
		t.Fatal(err)
	}
	return xtool.NewHandler(reg)
}

func call(h *xtool.Handler, st ledger.State, name string, args any) artifact.ToolResult {
	b, _ := json.Marshal(args)
	ctx := context.Background()
	if st != nil {
		ctx = xtool.WithCaller(ctx, st)
	}
	return h.Execute(ctx, artifact.ToolCall{ID: "c1", Name: name, Arguments: string(b)})
}

var (
	alice      = auth.Identity{User: "alice", Tenant: "acme", Roles: []string{"staff"}}
	bob        = auth.Identity{User: "bob", Tenant: "acme", Roles: []string{"staff"}}
	aliceOther = auth.Identity{User: "alice", Tenant: "globex", Roles: []string{"staff"}}
)

func TestToolsScopeFromTheThreadOnly(t *testing.T) {
	store := openFile(t)
	defer store.Close()
	h := handler(t, store)
	if r := call(h, caller(alice), memory.SaveTool, map[string]any{"fact": "Alice's locker code is 4417."}); r.IsError {
		t.Fatalf("save: %s", r.Content)
	}
	tests := []struct {
		name   string
		st     ledger.State
		args   map[string]any
		found  bool
		refuse bool
	}{
		{"owner", caller(alice), map[string]any{"query": "locker code"}, true, false},
		{"other user", caller(bob), map[string]any{"query": "locker code"}, false, false},
		{"same user, other tenant", caller(aliceOther), map[string]any{"query": "locker code"}, false, false},
		{"other user naming the owner", caller(bob), map[string]any{"query": "locker code", "user": "alice", "tenant": "acme"}, false, true},
		{"no thread", nil, map[string]any{"query": "locker code"}, false, true},
		{"anonymous thread", ledger.NewThread(), map[string]any{"query": "locker code"}, false, true},
		{"tenant but no user", caller(auth.Identity{Tenant: "acme"}), map[string]any{"query": "locker code"}, false, true},
		{"injection", caller(bob), map[string]any{"query": "' OR '1'='1' -- %"}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(h, tc.st, memory.SearchTool, tc.args)
			if r.IsError != tc.refuse {
				t.Fatalf("IsError = %v (%s), want %v", r.IsError, r.Content, tc.refuse)
			}
			if got := strings.Contains(r.Content, "4417"); got != tc.found {
				t.Fatalf("found = %v: %s", got, r.Content)
			}
		})
	}
	// A save naming another user is refused by the schema, not saved there.
	r := call(h, caller(bob), memory.SaveTool, map[string]any{"fact": "Bob likes tea.", "user": "alice"})
	if !r.IsError {
		t.Fatalf("a save with a user argument: %s", r.Content)
	}
	if list, _ := store.List(context.Background(), memory.Scope{Tenant: "acme", User: "alice"}); len(list) != 1 {
		t.Fatalf("alice's facts: %+v", list)
	}
}

func TestToolsRefusals(t *testing.T) {
	store := openFile(t)
	defer store.Close()
	h := handler(t, store, memory.WithRoles("admin", "staff"))
	tests := []struct {
		name string
		st   ledger.State
		tool string
		args map[string]any
		want string
	}{
		{"no identity save", ledger.NewThread(), memory.SaveTool, map[string]any{"fact": "x"}, "no signed-in user"},
		{"no identity search", ledger.NewThread(), memory.SearchTool, map[string]any{"query": "x"}, "no signed-in user"},
		{"role missing", caller(auth.Identity{User: "eve", Roles: []string{"guest"}}), memory.SaveTool, map[string]any{"fact": "x"}, "roles"},
		{"blank fact", caller(alice), memory.SaveTool, map[string]any{"fact": "   "}, "empty"},
		{"long fact", caller(alice), memory.SaveTool, map[string]any{"fact": strings.Repeat("x", memory.MaxFactBytes+1)}, ""},
		{"limit too large", caller(alice), memory.SearchTool, map[string]any{"query": "x", "limit": memory.MaxLimit + 1}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(h, tc.st, tc.tool, tc.args)
			if !r.IsError || !strings.Contains(r.Content, tc.want) {
				t.Fatalf("%q (error %v), want an error result saying %q", r.Content, r.IsError, tc.want)
			}
		})
	}
	if r := call(h, caller(alice), memory.SaveTool, map[string]any{"fact": "Alice is staff."}); r.IsError {
		t.Fatalf("a staff save: %s", r.Content)
	}
}

func TestToolsBoundResults(t *testing.T) {
	store := openFile(t)
	defer store.Close()
	sc, _ := memory.ScopeOf(alice)
	texts := make([]string, 80)
	for i := range texts {
		texts[i] = "Alice owns a bicycle."
	}
	if _, err := store.Save(context.Background(), sc, texts...); err != nil {
		t.Fatal(err)
	}
	h := handler(t, store)
	for _, tc := range []struct {
		args map[string]any
		want int
	}{
		{map[string]any{"query": "bicycle"}, memory.DefaultLimit},
		{map[string]any{"query": "bicycle", "limit": 3}, 3},
		{map[string]any{"query": "bicycle", "limit": memory.MaxLimit}, memory.MaxLimit},
	} {
		r := call(h, caller(alice), memory.SearchTool, tc.args)
		var out struct{ Facts []struct{ ID, Fact string } }
		if err := json.Unmarshal([]byte(r.Content), &out); err != nil || len(out.Facts) != tc.want {
			t.Fatalf("%v: %d facts (%v), want %d: %.200s", tc.args, len(out.Facts), err, tc.want, r.Content)
		}
	}
}

func TestToolsHints(t *testing.T) {
	for _, b := range memory.Tools(openFile(t)) {
		switch b.Tool.Name {
		case memory.SearchTool:
			if !b.Tool.Hints.Private || !b.Tool.Hints.ReadOnly {
				t.Errorf("memory_search hints %+v, want Private and ReadOnly", b.Tool.Hints)
			}
		case memory.SaveTool:
			if b.Tool.Hints.ReadOnly {
				t.Errorf("memory_save is not read-only")
			}
		default:
			t.Errorf("unexpected tool %q", b.Tool.Name)
		}
	}
}
