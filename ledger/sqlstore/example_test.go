package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/sqlstore"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
)

// Any *sql.DB works with its Dialect; here an SQLite database the
// application already has open, shared with its own tables.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "lode-sqlstore-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := sql.Open("sqlite", sqlite.DSN(filepath.Join(dir, "app.db")))
	if err != nil {
		panic(err)
	}
	defer db.Close()

	store, err := sqlstore.Open(ctx, db, sqlstore.SQLite)
	if err != nil {
		panic(err)
	}
	defer store.Close() // leaves db open: the application owns it
	st, err := store.Create(ctx, ledger.WithID("t1"))
	if err != nil {
		panic(err)
	}
	st.Append(ledger.RoleUser, artifact.Text{Content: "hello"})

	var turns int
	db.QueryRowContext(ctx, `SELECT turns FROM lode_threads WHERE id = 't1'`).Scan(&turns)
	fmt.Println(turns, "turn stored; schema version", sqlstore.SchemaVersion)
	// Output: 1 turn stored; schema version 3
}
