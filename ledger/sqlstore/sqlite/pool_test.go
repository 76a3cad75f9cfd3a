package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
)

// TestPoolSize checks the pool's bound: DefaultMaxConns, or WithMaxConns's
// count, 0 or less meaning the default.
func TestPoolSize(t *testing.T) {
	for _, tc := range []struct {
		opts []sqlite.Option
		want int
	}{
		{nil, sqlite.DefaultMaxConns},
		{[]sqlite.Option{sqlite.WithMaxConns(2)}, 2},
		{[]sqlite.Option{sqlite.WithMaxConns(0)}, sqlite.DefaultMaxConns},
		{[]sqlite.Option{sqlite.WithMaxConns(-1)}, sqlite.DefaultMaxConns},
	} {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		st := s.DB().Stats()
		if st.MaxOpenConnections != tc.want {
			t.Errorf("at most %d connections, want %d", st.MaxOpenConnections, tc.want)
		}
		s.Close()
	}
}
