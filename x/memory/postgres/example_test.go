package postgres_test

import (
	"context"
	"fmt"
	"os"

	"github.com/lodeworks/lode/x/auth"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/memory/postgres"
)

// Facts in PostgreSQL, searched with its text search; the password comes
// from PGPASSWORD or ~/.pgpass, never the DSN in a file. It needs a
// server, so it is compiled, not run, by go test (the package's tests run
// the same calls against a real server).
func Example() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, os.Getenv("LODE_MEMORY_DSN")) // postgres://lode@127.0.0.1:5432/lode
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	alice, _ := memory.ScopeOf(auth.Identity{User: "alice", Tenant: "acme"})
	if _, err := store.Save(ctx, alice, "Alice's invoices go to the Porto office."); err != nil {
		fmt.Println(err)
		return
	}
	found, _ := store.Search(ctx, alice, "where do invoices go?", 5)
	for _, f := range found {
		fmt.Println(f.Text)
	}
}
