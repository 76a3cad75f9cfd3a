package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/sqlstore"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
)

// Many handles, as many processes would, open one new database file at
// the same moment: none fails with SQLITE_BUSY, the schema is made once,
// and every one of them can write. Setting up a new file is where opens
// collide (switching it to WAL), so each round takes a fresh file; only
// the last round writes, since a write costs an fsync.
func TestConcurrentOpenNewFile(t *testing.T) {
	const rounds, handles = 40, 12
	ctx := context.Background()
	for round := range rounds {
		path := filepath.Join(t.TempDir(), "ledger.db")
		stores := make([]*sqlstore.Store, handles)
		errs := make([]error, handles)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range handles {
			wg.Go(func() {
				<-start
				stores[i], errs[i] = sqlite.Open(ctx, path)
				if errs[i] != nil || round < rounds-1 {
					return
				}
				var st *ledger.StoredThread
				if st, errs[i] = stores[i].Create(ctx, ledger.WithID(fmt.Sprint("t", i))); errs[i] == nil {
					errs[i] = st.Append(ledger.RoleUser)
				}
			})
		}
		close(start)
		wg.Wait()
		for _, s := range stores {
			if s != nil {
				t.Cleanup(func() { s.Close() })
			}
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, handle %d: %v", round, i, err)
			}
		}
		if round < rounds-1 {
			continue
		}
		var ids []string
		for info, err := range stores[0].List(ctx) {
			if err != nil || info.Turns != 1 {
				t.Fatalf("round %d: list %+v: %v", round, info, err)
			}
			ids = append(ids, info.ID)
		}
		if len(ids) != handles {
			t.Fatalf("round %d: listed %s", round, strings.Join(ids, ","))
		}
	}
}

// Switching a new file to WAL is the one step SQLite will not wait on: it
// fails at once with SQLITE_BUSY while another handle holds the write
// lock. Open retries it within the busy timeout; with no timeout it fails.
func TestOpenRetriesTheWALSwitch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	raw, err := sql.Open("sqlite", path) // rollback journal, no busy timeout
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, stmt := range []string{"BEGIN IMMEDIATE", "CREATE TABLE other (x)"} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}

	_, err = sqlite.Open(ctx, path, sqlite.WithBusyTimeout(-1))
	if want := "sqlite: open " + path + ": switch to WAL: database is locked (5) (SQLITE_BUSY)"; err == nil || err.Error() != want {
		t.Fatalf("open without waiting: %v\nwant %s", err, want)
	}

	busy := 0
	s, err := sqlite.Open(ctx, path, sqlite.WithOnBusy(func() {
		busy++
		if busy == 1 {
			if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
				t.Error(err)
			}
		}
	}))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	var mode string
	if err := s.DB().QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" || busy != 1 {
		t.Fatalf("journal mode %q (%v) after %d busy tries, want wal after 1", mode, err, busy)
	}
}

// The busy timeout is set on every connection of the pool, and with
// synchronous=FULL; so is it on a raw handle opened with DSN.
func TestBusyTimeoutOnEveryConnection(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		opts []sqlite.Option
		want int
	}{
		{"default", nil, 10000},
		{"set", []sqlite.Option{sqlite.WithBusyTimeout(1500 * time.Millisecond)}, 1500},
		{"no waiting", []sqlite.Option{sqlite.WithBusyTimeout(-time.Second)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			s, err := sqlite.Open(ctx, path, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			raw, err := sql.Open("sqlite", sqlite.DSN(path, tc.opts...))
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			for _, db := range []*sql.DB{s.DB(), raw} {
				// Holding several connections at once makes the pool open
				// that many.
				var conns []*sql.Conn
				for range 4 {
					c, err := db.Conn(ctx)
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					conns = append(conns, c)
				}
				for i, c := range conns {
					var busy, sync int
					if err := c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
						t.Fatal(err)
					}
					if err := c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
						t.Fatal(err)
					}
					if busy != tc.want || sync != 2 {
						t.Errorf("connection %d: busy_timeout %d, synchronous %d; want %d and 2 (FULL)", i, busy, sync, tc.want)
					}
				}
			}
		})
	}
	if got, want := sqlite.DSN("/x/l.db", sqlite.WithBusyTimeout(2*time.Second)), "/x/l.db?_pragma=busy_timeout%282000%29&_pragma=synchronous%28FULL%29"; got != want {
		t.Errorf("DSN = %s, want %s", got, want)
	}
}

// A write waits for a lock another handle holds for the busy timeout, then
// fails with SQLITE_BUSY.
func TestBusyTimeoutRunsOut(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := sqlite.Open(ctx, path, sqlite.WithBusyTimeout(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, err := sql.Open("sqlite", sqlite.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Create(ctx, ledger.WithID("x"))
	if want := "sqlstore: create x: database is locked (5) (SQLITE_BUSY)"; err == nil || err.Error() != want {
		t.Fatalf("create under a held lock: %v\nwant %s", err, want)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, ledger.WithID("x")); err != nil {
		t.Fatalf("create once the lock is free: %v", err)
	}
}
