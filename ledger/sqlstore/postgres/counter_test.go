package postgres_test

import (
	"testing"

	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/internal/countertest"
)

func TestCounter(t *testing.T) {
	srv := pgtest.Shared(t)
	dsns := map[string]string{}
	countertest.Run(t, func(t testing.TB) ledger.Counter {
		dsn, ok := dsns[t.Name()]
		if !ok {
			dsn = srv.NewDatabase(t)
			dsns[t.Name()] = dsn
		}
		return open(t, dsn)
	})
}
