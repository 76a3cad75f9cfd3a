package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/ledgertest"
	"github.com/lodeworks/lode/ledger/sqlstore"
	"github.com/lodeworks/lode/ledger/sqlstore/internal/sqltest"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
)

func open(t testing.TB, path string) *sqlstore.Store {
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	ledgertest.Run(t, func(t testing.TB) ledgertest.Opener {
		path := filepath.Join(t.TempDir(), "ledger.db")
		return func(t testing.TB) ledger.Store { return open(t, path) }
	})
}

// A lost turn row is listed as damage, not as a shorter thread.
func TestContractDamaged(t *testing.T) {
	ledgertest.RunDamaged(t, func(t testing.TB) (ledgertest.Opener, ledgertest.Damage) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		damage := func(t testing.TB, id string) {
			raw, err := sql.Open("sqlite", sqlite.DSN(path))
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Exec(`DELETE FROM lode_turns WHERE thread_id = ? AND seq = (SELECT MAX(seq) FROM lode_turns WHERE thread_id = ?)`, id, id); err != nil {
				t.Fatal(err)
			}
		}
		return func(t testing.TB) ledger.Store { return open(t, path) }, damage
	})
}

func TestSQL(t *testing.T) {
	sqltest.Run(t, func(t testing.TB) sqltest.Backend {
		path := filepath.Join(t.TempDir(), "ledger.db")
		raw, err := sql.Open("sqlite", sqlite.DSN(path))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { raw.Close() })
		return sqltest.Backend{
			Open:    func(t testing.TB) *sqlstore.Store { return open(t, path) },
			Dial:    func(ctx context.Context) (*sqlstore.Store, error) { return sqlite.Open(ctx, path) },
			Raw:     raw,
			Dialect: sqlstore.SQLite,
		}
	})
}

func TestCrash(t *testing.T) {
	ledgertest.Crash(t, "TestCrash", func(dir string) (ledger.Store, error) {
		return sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"))
	}, 1, 12, 3, 40)
}

func TestOpenRejectsBadPaths(t *testing.T) {
	for _, p := range []string{"", "a.db?mode=ro", "a#b"} {
		_, err := sqlite.Open(context.Background(), p)
		if err == nil || !strings.Contains(err.Error(), "want a file path without '?' or '#'") {
			t.Errorf("open %q: %v", p, err)
		}
	}
	_, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"))
	if err == nil || !strings.Contains(err.Error(), "sqlite: ") {
		t.Fatalf("open in a missing folder: %v", err)
	}
}

func TestLeaseCrash(t *testing.T) {
	ledgertest.LeaseCrash(t, "TestLeaseCrash", func(t testing.TB) string { return filepath.Join(t.TempDir(), "ledger.db") },
		func(path string) (ledger.Store, error) { return sqlite.Open(context.Background(), path) })
}

func TestForkCrash(t *testing.T) {
	ledgertest.ForkCrash(t, "TestForkCrash", func(t testing.TB) string { return filepath.Join(t.TempDir(), "ledger.db") },
		func(path string) (ledger.Store, error) { return sqlite.Open(context.Background(), path) })
}
