package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

// A run bound to SQLite: the loop appends each turn as it completes, and
// each append is a committed transaction.
func Example() {
	dir, err := os.MkdirTemp("", "lode-sqlite-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "ledger.db")

	store, err := sqlite.Open(ctx, path)
	if err != nil {
		panic(err)
	}
	st, err := store.Create(ctx, ledger.WithID("ticket-7"), ledger.WithMetadata(map[string]string{"tenant": "acme"}))
	if err != nil {
		panic(err)
	}
	st.Append(ledger.RoleUser, artifact.Text{Content: "Reset my password, please."})
	if _, err := loop.New().Run(ctx, st, script.Play(script.Text("Done: check your inbox."))); err != nil {
		panic(err)
	}
	store.Close()

	store, err = sqlite.Open(ctx, path)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	for info, err := range store.List(ctx) {
		if err != nil {
			panic(err)
		}
		fmt.Println(info.ID, info.Turns, "turns, tenant", info.Metadata["tenant"])
	}
	again, err := store.Load(ctx, "ticket-7")
	if err != nil {
		panic(err)
	}
	for _, t := range again.Turns() {
		fmt.Printf("%s: %s\n", t.Role, t.Artifacts[0].(artifact.Text).Content)
	}
	// Output:
	// ticket-7 2 turns, tenant acme
	// user: Reset my password, please.
	// assistant: Done: check your inbox.
}
