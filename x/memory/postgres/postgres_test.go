package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/x/memory"
	"github.com/lodeworks/lode/x/memory/internal/memorytest"
	"github.com/lodeworks/lode/x/memory/postgres"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func open(t testing.TB) memory.Store {
	s, err := postgres.Open(context.Background(), pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContract(t *testing.T) { memorytest.Run(t, open) }

// TestOpenTwice opens the same database again: the tables are created once
// and the facts are kept.
func TestOpenTwice(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).NewDatabase(t)
	sc := memory.Scope{Tenant: "acme", User: "alice"}
	a, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Save(ctx, sc, "Alice keeps bees."); err != nil {
		t.Fatal(err)
	}
	b, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.Search(ctx, sc, "bees", 5)
	if err != nil || len(got) != 1 {
		t.Fatalf("search through a second handle: %+v, %v", got, err)
	}
}
