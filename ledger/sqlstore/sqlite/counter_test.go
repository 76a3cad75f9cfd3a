package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/ledgertest"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
)

func TestCounter(t *testing.T) {
	paths := map[string]string{}
	ledgertest.RunCounter(t, func(t testing.TB) ledger.Counter {
		path, ok := paths[t.Name()]
		if !ok {
			path = filepath.Join(t.TempDir(), "lode.db")
			paths[t.Name()] = path
		}
		s, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
