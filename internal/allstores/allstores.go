// Package allstores opens each of lode's stores for tests that must hold
// on every one: the file store, SQLite and, unless pgtest.Env is "off",
// PostgreSQL.
package allstores

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/ledger/sqlstore/postgres"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
)

// Openers gives, by store name, an opener over storage of its own made for
// t: each call of an opener is another process's view of the same storage.
// An opener takes the calling test, so that a failure is reported on the
// goroutine that runs it; closing what it opens is the caller's.
func Openers(t *testing.T) map[string]func(*testing.T) ledger.Store {
	t.Helper()
	dir := t.TempDir()
	out := map[string]func(*testing.T) ledger.Store{
		"file": func(t *testing.T) ledger.Store {
			s, err := file.Open(filepath.Join(dir, "file"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"sqlite": func(t *testing.T) ledger.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(dir, "lode.db"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	if os.Getenv(pgtest.Env) != "off" {
		dsn := pgtest.Shared(t).NewDatabase(t)
		out["postgres"] = func(t *testing.T) ledger.Store {
			s, err := postgres.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	return out
}
