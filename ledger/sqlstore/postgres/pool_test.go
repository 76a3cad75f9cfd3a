package postgres_test

import (
	"context"
	"testing"

	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger/sqlstore/postgres"
)

// TestPoolSize checks the pool's bound: DefaultMaxConns, or the DSN's
// pool_max_conns, which is not sent to the server as a setting.
func TestPoolSize(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"", postgres.DefaultMaxConns},
		{"&pool_max_conns=3", 3},
	} {
		s := open(t, dsn+tc.query)
		if got := s.DB().Stats().MaxOpenConnections; got != tc.want {
			t.Errorf("%q: at most %d connections, want %d", tc.query, got, tc.want)
		}
		if err := s.DB().PingContext(context.Background()); err != nil {
			t.Errorf("%q: %v", tc.query, err)
		}
		s.Close()
	}
}

// TestPoolSizeRefused checks that a pool_max_conns that is no count fails
// Open, before it connects, and says what it wants.
func TestPoolSizeRefused(t *testing.T) {
	for _, v := range []string{"0", "-1", "many"} {
		_, err := postgres.Open(context.Background(), "postgres://lode@127.0.0.1:1/none?pool_max_conns="+v)
		want := `postgres: pool_max_conns="` + v + `": want a count of 1 or more`
		if err == nil || err.Error() != want {
			t.Errorf("pool_max_conns=%s: %v, want %s", v, err, want)
		}
	}
}
