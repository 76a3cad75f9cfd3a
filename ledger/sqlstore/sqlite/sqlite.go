package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	msqlite "modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lodeworks/lode/ledger/sqlstore"
)

// DefaultBusyTimeout is how long a statement waits for a lock that another
// connection or process holds before it fails with SQLITE_BUSY, when
// WithBusyTimeout is not given.
const DefaultBusyTimeout = 10 * time.Second

// DefaultMaxConns is how many connections Open's pool opens at most when
// WithMaxConns is not given.
const DefaultMaxConns = 8

// Option configures Open and DSN.
type Option func(*config)

type config struct {
	busy   time.Duration
	conns  int
	store  []sqlstore.Option
	onBusy func() // tests: called before each wait to retry the WAL switch
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.conns <= 0 {
		c.conns = DefaultMaxConns
	}
	switch {
	case c.busy == 0:
		c.busy = DefaultBusyTimeout
	case c.busy < 0:
		c.busy = 0
	}
	return c
}

// WithBusyTimeout sets how long each connection waits for a lock another
// connection or process holds: it is set on every connection of the pool.
// 0 means DefaultBusyTimeout; a negative value means no waiting at all, so
// any contention fails at once with SQLITE_BUSY.
func WithBusyTimeout(d time.Duration) Option { return func(c *config) { c.busy = d } }

// WithMaxConns sets how many connections Open's pool opens at most, and
// keeps open when idle; 0 or less means DefaultMaxConns. SQLite runs one
// writer at a time: more connections than that only wait on its lock, in
// its busy handler, which sleeps and retries in no order, so that under
// load a writer can wait past the busy timeout. Requests beyond the pool
// wait for a connection in order instead.
func WithMaxConns(n int) Option { return func(c *config) { c.conns = n } }

// WithStoreOptions passes options to sqlstore.Open.
func WithStoreOptions(opts ...sqlstore.Option) Option {
	return func(c *config) { c.store = append(c.store, opts...) }
}

// DSN returns the data source name Open uses for the database file at path.
// Its settings apply to every connection: the busy timeout (see
// WithBusyTimeout) and synchronous=FULL. The journal mode is a property of
// the file, which Open switches to WAL once; a handle opened with DSN alone
// keeps the mode the file has.
func DSN(path string, opts ...Option) string {
	c := newConfig(opts)
	return dsn(path, c.busy)
}

func dsn(path string, busy time.Duration) string {
	q := url.Values{"_pragma": {
		"busy_timeout(" + strconv.FormatInt(busy.Milliseconds(), 10) + ")",
		"synchronous(FULL)",
	}}
	return path + "?" + q.Encode()
}

// Open opens (creating if needed) the SQLite database at path and returns a
// Store over it that closes the database when it is closed. Any number of
// handles, in one process or many, may open the same file at once: each
// waits for the others' locks up to the busy timeout.
func Open(ctx context.Context, path string, opts ...Option) (*sqlstore.Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlite: open %q: want a file path without '?' or '#'", path)
	}
	c := newConfig(opts)
	db, err := sql.Open("sqlite", dsn(path, c.busy))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(c.conns)
	db.SetMaxIdleConns(c.conns)
	if err := useWAL(ctx, db, c.busy, c.onBusy); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s, err := sqlstore.Open(ctx, db, sqlstore.SQLite, append([]sqlstore.Option{sqlstore.WithCloseDB()}, c.store...)...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	return s, nil
}

// useWAL switches the database file to WAL mode, so that readers and the
// writer do not block each other. The switch reads the file, then writes
// it; two handles making it at once could each wait on the other, so
// SQLite fails one at once with SQLITE_BUSY instead of calling its busy
// handler. useWAL retries that, for up to the busy timeout, rather than
// failing the open.
func useWAL(ctx context.Context, db *sql.DB, busy time.Duration, onBusy func()) error {
	deadline := time.Now().Add(busy)
	wait := time.Millisecond
	for {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("switch to WAL: the file stays in journal mode %q", mode)
			}
			return nil
		}
		if !isBusy(err) || time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("switch to WAL: %w", err)
		}
		if onBusy != nil {
			onBusy()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("switch to WAL: %w", ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

func isBusy(err error) bool {
	var e *msqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
}
