package sqlstore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/sqlstore"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
)

func TestOpenUnknownDialect(t *testing.T) {
	db, err := sql.Open("sqlite", sqlite.DSN(filepath.Join(t.TempDir(), "x.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = sqlstore.Open(context.Background(), db, "oracle")
	if err == nil || !strings.Contains(err.Error(), `unknown dialect "oracle" (want "sqlite" or "postgres")`) {
		t.Fatalf("open: %v", err)
	}
}

func TestCloseLeavesAnUnownedDBOpen(t *testing.T) {
	db, err := sql.Open("sqlite", sqlite.DSN(filepath.Join(t.TempDir(), "x.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := sqlstore.Open(context.Background(), db, sqlstore.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err != nil {
		t.Fatalf("the store closed a database it does not own: %v", err)
	}
}

func TestListPages(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "x.db"), sqlite.WithStoreOptions(sqlstore.WithPageSize(2)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []string{"a", "b", "c", "d", "e"}
	for _, id := range []string{"e", "c", "a", "d", "b"} {
		st, err := s.Create(ctx, ledger.WithID(id), ledger.WithMetadata(map[string]string{"id": id}))
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	var got []string
	for info, err := range s.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if info.Metadata["id"] != info.ID {
			t.Fatalf("%s has metadata %v", info.ID, info.Metadata)
		}
		got = append(got, info.ID)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("listed %v over pages of 2", got)
	}
}
