package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/memory/sqlite"
)

// Facts in one SQLite file, searched with its full-text index: each
// user finds their own only.
func Example() {
	dir, _ := os.MkdirTemp("", "memory")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "memory.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	alice, _ := memory.ScopeOf(auth.Identity{User: "alice", Tenant: "acme"})
	bob, _ := memory.ScopeOf(auth.Identity{User: "bob", Tenant: "acme"})
	if _, err := store.Save(ctx, alice, "Alice's invoices go to the Porto office.", "Alice prefers meetings after ten."); err != nil {
		fmt.Println(err)
		return
	}
	found, _ := store.Search(ctx, alice, "where do invoices go?", 5)
	for _, f := range found {
		fmt.Println(f.Text)
	}
	found, _ = store.Search(ctx, bob, "where do invoices go?", 5)
	fmt.Println(len(found), "facts for bob")
	// Output:
	// Alice's invoices go to the Porto office.
	// 0 facts for bob
}
