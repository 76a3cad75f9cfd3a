package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
	xtool "github.com/lodeworks/lode/x/tool"
)

// Example saves facts for one user in a file store, and searches them as
// that user and as another.
func Example() {
	dir, _ := os.MkdirTemp("", "memory")
	defer os.RemoveAll(dir)
	store, err := memory.OpenFile(dir)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	ctx := context.Background()

	alice, _ := memory.ScopeOf(auth.Identity{User: "alice", Tenant: "acme"})
	store.Save(ctx, alice, "Alice lives in Lisbon.", "Alice's favourite food is grilled sardines.")

	found, _ := store.Search(ctx, alice, "What food does Alice like?", 1)
	fmt.Println(found[0].Text)

	bob, _ := memory.ScopeOf(auth.Identity{User: "bob", Tenant: "acme"})
	found, _ = store.Search(ctx, bob, "What food does Alice like?", 1)
	fmt.Println(len(found), "facts for bob")

	_, err = memory.ScopeOf(auth.Identity{})
	fmt.Println(err)
	// Output:
	// Alice's favourite food is grilled sardines.
	// 0 facts for bob
	// memory: no identity: the caller has no user
}

// ExampleTools calls memory_search as a model would, through a handler,
// for the caller whose identity a door wrote on the thread.
func ExampleTools() {
	dir, _ := os.MkdirTemp("", "memory")
	defer os.RemoveAll(dir)
	store, _ := memory.OpenFile(dir)
	defer store.Close()

	reg := tool.NewRegistry()
	if err := memory.Register(reg, store); err != nil {
		panic(err)
	}
	h := xtool.NewHandler(reg)

	alice := ledger.NewThread(ledger.WithMetadata(auth.Identity{User: "alice", Tenant: "acme"}.Metadata()))
	ctx := xtool.WithCaller(context.Background(), alice)
	h.Execute(ctx, artifact.ToolCall{ID: "1", Name: "memory_save", Arguments: `{"fact":"Alice keeps bees."}`})
	r := h.Execute(ctx, artifact.ToolCall{ID: "2", Name: "memory_search", Arguments: `{"query":"bees"}`})
	var out struct{ Facts []struct{ ID, Fact string } }
	json.Unmarshal([]byte(r.Content), &out)
	fmt.Println(out.Facts[0].Fact)

	anonymous := xtool.WithCaller(context.Background(), ledger.NewThread())
	r = h.Execute(anonymous, artifact.ToolCall{ID: "3", Name: "memory_search", Arguments: `{"query":"bees"}`})
	fmt.Println(r.IsError, r.Content)
	// Output:
	// Alice keeps bees.
	// true Memory is not available: this conversation has no signed-in user. Nothing was saved or searched.
}
