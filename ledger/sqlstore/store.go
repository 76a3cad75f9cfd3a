package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lodeworks/lode/ledger"
)

// Dialect names the SQL database behind a Store.
type Dialect string

// The dialects a Store speaks.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// DefaultTimeout bounds one Append or SetMetadata when WithTimeout is not
// given; they take no context, and a database that hangs must not hang the
// loop.
const DefaultTimeout = 30 * time.Second

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that stamps turns and threads; nil leaves turns
// unstamped. The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.now = now; s.clockSet = true }
}

// WithTimeout bounds each Append and SetMetadata; 0 means DefaultTimeout.
func WithTimeout(d time.Duration) Option { return func(s *Store) { s.timeout = d } }

// WithCloseDB makes Close close the *sql.DB too, for a Store that owns
// its database.
func WithCloseDB() Option { return func(s *Store) { s.closeDB = true } }

// WithPageSize sets how many threads List reads per query; 0 means 100.
func WithPageSize(n int) Option { return func(s *Store) { s.pageSize = n } }

// Store keeps threads in three tables of a SQL database. It is safe for
// concurrent use, and any number of Stores, in one process or many, may
// share a database.
type Store struct {
	db       *sql.DB
	dialect  Dialect
	now      func() time.Time
	clockSet bool
	timeout  time.Duration
	closeDB  bool
	pageSize int
	closed   atomic.Bool
	q        queries
	// writer is SQLite's one write lock as this process queues for it:
	// its writers wait here in turn, without a connection, rather than
	// each holding one of the pool's while SQLite's busy handler sleeps,
	// so reads keep the pool and the lock passes on as soon as it is free.
	writer chan struct{}
	group  group

	closeOnce sync.Once
	closeErr  error
}

// Open returns a Store over db, creating or migrating its tables first.
func Open(ctx context.Context, db *sql.DB, d Dialect, opts ...Option) (*Store, error) {
	if d != SQLite && d != Postgres {
		return nil, fmt.Errorf("sqlstore: unknown dialect %q (want %q or %q)", d, SQLite, Postgres)
	}
	s := &Store{db: db, dialect: d, writer: make(chan struct{}, 1)}
	s.group.max = 1
	if d == Postgres {
		s.group.max = pgBatches
	}
	for _, o := range opts {
		o(s)
	}
	if !s.clockSet {
		s.now = time.Now
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.pageSize <= 0 {
		s.pageSize = 100
	}
	s.q = newQueries(d)
	if err := s.migrate(ctx); err != nil {
		if s.closeDB {
			db.Close()
		}
		return nil, fmt.Errorf("sqlstore: open: %w", err)
	}
	return s, nil
}

// pgBatches is how many group commits a Store runs on PostgreSQL at once;
// SQLite's one writer runs one. Two keep the server busy while a batch
// waits for its flush; more make smaller batches that wait on each other's
// row locks (at 1,000 conversations on two cores, the first part of an
// answer came after 0.6 s with one, 0.5 s with two, 0.86 s with four).
const pgBatches = 2

// DB returns the database the store uses.
func (s *Store) DB() *sql.DB { return s.db }

func (s *Store) stamp() int64 {
	if s.now == nil {
		return 0
	}
	return s.now().UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func (s *Store) check(op string, ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlstore: %s: %w", op, ledger.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlstore: %s: %w", op, err)
	}
	return nil
}

// querier is what a transaction offers: *sql.Tx and *sql.Conn both do.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// write runs fn in a read-write transaction. SQLite's is begun IMMEDIATE,
// taking the write lock up front: a deferred one that reads first can fail
// with SQLITE_BUSY when it upgrades, whatever the busy timeout.
func (s *Store) write(ctx context.Context, fn func(q querier) error) error {
	return s.writeSync(ctx, true, fn)
}

// writeSync is write; with durable false, SQLite commits the transaction
// without waiting for the disk (synchronous=NORMAL, in WAL mode): it stays
// atomic and in order with every other commit, and is durable as soon as
// any later commit is, but a power cut or an OS crash may lose it. Lease
// records are written so (see leaseRecord). Other dialects ignore it.
func (s *Store) writeSync(ctx context.Context, durable bool, fn func(q querier) error) error {
	if s.dialect != SQLite {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writer }()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !durable {
		if _, err := conn.ExecContext(ctx, "PRAGMA synchronous=NORMAL"); err != nil {
			s.dropConn(conn)
			return err
		}
		defer func() {
			// Every other write waits for the disk: a connection that
			// cannot be set back is not handed out again.
			if _, err := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous=FULL"); err != nil {
				s.dropConn(conn)
			}
		}()
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if err := fn(conn); err != nil {
		s.rollback(conn)
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		s.rollback(conn)
		return err
	}
	return nil
}

// dropConn removes conn from the pool once it is closed.
func (s *Store) dropConn(conn *sql.Conn) { conn.Raw(func(any) error { return errBadConn }) }

// rollback ends a transaction begun by hand; a connection that cannot roll
// back is dropped from the pool rather than handed out mid-transaction.
func (s *Store) rollback(conn *sql.Conn) {
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		conn.Raw(func(any) error { return errBadConn })
	}
}

// read runs fn in a read-only transaction that sees one snapshot.
func (s *Store) read(ctx context.Context, fn func(q querier) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.dialect == Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// Create inserts a thread, with the turns and metadata the options seed.
func (s *Store) Create(ctx context.Context, opts ...ledger.ThreadOption) (*ledger.StoredThread, error) {
	if err := s.check("create", ctx); err != nil {
		return nil, err
	}
	seed := ledger.NewThread(opts...)
	id := seed.ID()
	if err := ledger.CheckID(id); err != nil {
		return nil, fmt.Errorf("sqlstore: create: %w", err)
	}
	snap := ledger.Snapshot{Turns: append([]ledger.Turn(nil), seed.Turns()...), Metadata: seed.AllMetadata()}
	if snap.Metadata == nil {
		snap.Metadata = map[string]string{}
	}
	snap.Version = int64(len(snap.Turns))
	rows := make([][]byte, len(snap.Turns))
	for i, t := range snap.Turns {
		b, err := t.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("sqlstore: create %s: turn %d: %w", id, i, err)
		}
		rows[i] = b
	}
	inc := ledger.NewID()
	now := s.stamp()
	err := s.commit(ctx, id, true, func(ctx context.Context, q querier) error {
		res, err := q.ExecContext(ctx, s.q.insertThread, id, inc, snap.Version, len(rows), now, now, "", 0)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return refuse(fmt.Errorf("thread %q already exists: %w", id, ledger.ErrConflict))
		}
		for i, b := range rows {
			if _, err := q.ExecContext(ctx, s.q.insertTurn, id, i, string(snap.Turns[i].Role), string(b)); err != nil {
				return err
			}
		}
		for k, v := range snap.Metadata {
			if _, err := q.ExecContext(ctx, s.q.upsertMeta, id, k, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: create %s: %w", id, err)
	}
	return ledger.NewStoredThread(id, snap, &journal{s: s, id: id, inc: inc}, s.now), nil
}

// Load reads a thread in one snapshot.
func (s *Store) Load(ctx context.Context, id string) (*ledger.StoredThread, error) {
	if err := s.check("load", ctx); err != nil {
		return nil, err
	}
	if err := ledger.CheckID(id); err != nil {
		return nil, fmt.Errorf("sqlstore: load: %w", err)
	}
	j := &journal{s: s, id: id}
	snap, err := j.load(ctx, true)
	if err != nil {
		return nil, err
	}
	return ledger.NewStoredThread(id, snap, j, s.now), nil
}

// Close marks the store closed, and closes the database when the store
// owns it (WithCloseDB).
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.closeDB {
			if err := s.db.Close(); err != nil {
				s.closeErr = fmt.Errorf("sqlstore: close: %w", err)
			}
		}
	})
	return s.closeErr
}

var (
	_ ledger.Store  = (*Store)(nil)
	_ ledger.Forker = (*Store)(nil)
)
