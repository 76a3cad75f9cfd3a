package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/provider"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/provider/script"
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

// ExampleRecall adds what alice's memory holds about her message to the
// request, as a turn stored after her message, so the next request begins
// with this one and the provider's prompt cache keeps it.
func ExampleRecall() {
	dir, _ := os.MkdirTemp("", "memory")
	defer os.RemoveAll(dir)
	store, _ := memory.OpenFile(dir)
	defer store.Close()
	ctx := context.Background()
	id := auth.Identity{User: "alice", Tenant: "acme"}
	sc, _ := memory.ScopeOf(id)
	store.Save(ctx, sc, "Alice's dog is called Biscuit.")

	step := loop.New(loop.WithInvokeOptions(provider.WithSystemPrompt("You are helpful."), memory.Recall(store)))
	th := ledger.NewThread(ledger.WithMetadata(id.Metadata()))
	th.Append(ledger.RoleUser, artifact.Text{Content: "What is my dog called?"})
	prov := script.Play(script.Text("Biscuit."))
	if _, err := step.Run(ctx, th, prov); err != nil {
		panic(err)
	}
	for _, t := range prov.Requests()[0].Turns {
		fmt.Printf("%s %v\n", t.Role, memory.IsRecall(t))
	}
	fmt.Println(th.Turns()[1].Artifacts[0].(artifact.Resource).Text)
	fmt.Println(ledger.Labels(th))
	// Output:
	// system false
	// user false
	// user true
	// Facts remembered about the user from earlier conversations (from memory, not written by the user in this message):
	// - Alice's dog is called Biscuit.
	// [private]
}

// ExampleExtractor saves the facts a model finds in a run, after its last
// answer, in the caller's scope.
func ExampleExtractor() {
	dir, _ := os.MkdirTemp("", "memory")
	defer os.RemoveAll(dir)
	store, _ := memory.OpenFile(dir)
	defer store.Close()
	ctx := context.Background()

	extractor := script.Play(script.Text(`{"facts": ["Alice cycles to work."]}`))
	step := loop.New(loop.WithHandlers(memory.Extractor(store, extractor)))
	id := auth.Identity{User: "alice", Tenant: "acme"}
	th := ledger.NewThread(ledger.WithMetadata(id.Metadata()))
	th.Append(ledger.RoleUser, artifact.Text{Content: "I cycle to work, so keep routes bike-friendly."})
	if _, err := step.Run(ctx, th, script.Play(script.Text("Will do."))); err != nil {
		panic(err)
	}
	sc, _ := memory.ScopeOf(id)
	found, _ := store.Search(ctx, sc, "how does alice get to work", 1)
	fmt.Println(found[0].Text)
	// Output:
	// Alice cycles to work.
}
