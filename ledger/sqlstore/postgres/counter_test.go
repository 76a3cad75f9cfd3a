package postgres_test

import (
	"testing"

	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/ledgertest"
)

func TestCounter(t *testing.T) {
	srv := pgtest.Shared(t)
	dsns := map[string]string{}
	ledgertest.RunCounter(t, func(t testing.TB) ledger.Counter {
		dsn, ok := dsns[t.Name()]
		if !ok {
			dsn = srv.NewDatabase(t)
			dsns[t.Name()] = dsn
		}
		return open(t, dsn)
	})
}
