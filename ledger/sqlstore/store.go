package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
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

	closeOnce sync.Once
	closeErr  error
}

// Open returns a Store over db, creating or migrating its tables first.
func Open(ctx context.Context, db *sql.DB, d Dialect, opts ...Option) (*Store, error) {
	if d != SQLite && d != Postgres {
		return nil, fmt.Errorf("sqlstore: unknown dialect %q (want %q or %q)", d, SQLite, Postgres)
	}
	s := &Store{db: db, dialect: d}
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
	err := s.write(ctx, func(q querier) error {
		res, err := q.ExecContext(ctx, s.q.insertThread, id, inc, snap.Version, len(rows), now, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("thread %q already exists: %w", id, ledger.ErrConflict)
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

// Delete removes a thread, its turns and its metadata in one transaction.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.check("delete", ctx); err != nil {
		return err
	}
	if err := ledger.CheckID(id); err != nil {
		return fmt.Errorf("sqlstore: delete: %w", err)
	}
	err := s.write(ctx, func(q querier) error {
		res, err := q.ExecContext(ctx, s.q.deleteThread, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ledger.ErrNotFound
		}
		if _, err := q.ExecContext(ctx, s.q.deleteTurns, id); err != nil {
			return err
		}
		_, err = q.ExecContext(ctx, s.q.deleteMeta, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: delete %s: %w", id, err)
	}
	return nil
}

// List yields every thread in ID order (byte order, as the file store),
// reading a page of threads and their metadata per query; no connection is
// held while the caller's loop body runs.
//
// For each thread it also checks that the turn rows are the ones the
// thread records: as many, numbered from 0 with no gap. A thread whose
// rows disagree (a row lost or added behind the store's back), which Load
// would refuse, is yielded with its ID and an error matching
// ledger.ErrCorrupt, and listing goes on. The check counts index entries,
// O(turns) per thread; turns are not decoded, so a row whose turn does not
// decode is reported by Load alone.
func (s *Store) List(ctx context.Context) iter.Seq2[ledger.ThreadInfo, error] {
	return func(yield func(ledger.ThreadInfo, error) bool) {
		after := ""
		for {
			if err := s.check("list", ctx); err != nil {
				yield(ledger.ThreadInfo{}, err)
				return
			}
			page, err := s.page(ctx, after)
			if err != nil {
				yield(ledger.ThreadInfo{}, fmt.Errorf("sqlstore: list: %w", err))
				return
			}
			for _, l := range page {
				if !yield(l.info, l.err) {
					return
				}
			}
			if len(page) < s.pageSize {
				return
			}
			after = page[len(page)-1].info.ID
		}
	}
}

// listed is one thread of a List page, with what is wrong with it.
type listed struct {
	info ledger.ThreadInfo
	err  error
}

// turnRows summarises a thread's turn rows.
type turnRows struct{ count, min, max int64 }

func (s *Store) page(ctx context.Context, after string) ([]listed, error) {
	var page []listed
	err := s.read(ctx, func(q querier) error {
		page = page[:0]
		rows, err := q.QueryContext(ctx, s.q.listThreads, after, s.pageSize)
		if err != nil {
			return err
		}
		defer rows.Close()
		at := map[string]int{}
		for rows.Next() {
			var info ledger.ThreadInfo
			var created, updated int64
			if err := rows.Scan(&info.ID, &info.Turns, &created, &updated); err != nil {
				return err
			}
			info.Created, info.Updated = fromNanos(created), fromNanos(updated)
			info.Metadata = map[string]string{}
			at[info.ID] = len(page)
			page = append(page, listed{info: info})
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		first, last := page[0].info.ID, page[len(page)-1].info.ID
		mrows, err := q.QueryContext(ctx, s.q.listMeta, first, last)
		if err != nil {
			return err
		}
		defer mrows.Close()
		for mrows.Next() {
			var id, k, v string
			if err := mrows.Scan(&id, &k, &v); err != nil {
				return err
			}
			if i, ok := at[id]; ok {
				page[i].info.Metadata[k] = v
			}
		}
		if err := mrows.Err(); err != nil {
			return err
		}
		trows, err := q.QueryContext(ctx, s.q.listTurnRows, first, last)
		if err != nil {
			return err
		}
		defer trows.Close()
		found := make(map[string]turnRows, len(page))
		for trows.Next() {
			var id string
			var r turnRows
			if err := trows.Scan(&id, &r.count, &r.min, &r.max); err != nil {
				return err
			}
			found[id] = r
		}
		if err := trows.Err(); err != nil {
			return err
		}
		for i := range page {
			info := page[i].info
			if msg := checkTurnRows(int64(info.Turns), found[info.ID]); msg != "" {
				page[i].err = fmt.Errorf("sqlstore: list %s: %s: %w", info.ID, msg, ledger.ErrCorrupt)
			}
		}
		return nil
	})
	return page, err
}

// checkTurnRows says what is wrong when a thread that records turns turns
// does not have exactly the rows 0 to turns-1; "" when nothing is.
func checkTurnRows(turns int64, r turnRows) string {
	if r.count == turns && (turns == 0 || r.min == 0 && r.max == turns-1) {
		return ""
	}
	if r.count == 0 {
		return fmt.Sprintf("the thread records %d turns but no turn rows are stored", turns)
	}
	return fmt.Sprintf("the thread records %d turns but %d turn rows are stored, numbered %d to %d", turns, r.count, r.min, r.max)
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

// journal is the ledger.Journal of one StoredThread.
type journal struct {
	s      *Store
	id     string
	inc    string // which creation of the thread this is; set by load
	closed atomic.Bool
}

// leaseRecord reports whether r changes only a thread's lease. On SQLite
// such a record need not wait for the disk: WAL mode requires every
// process that opens the file to run on its host, so whatever loses the
// record unsynced (a power cut, an OS crash) also ended every owner that
// could hold the lease, and the thread reads as if the lease had lapsed;
// and the next turn appended, synced, makes the record durable with it.
// Each lease record is still a compare-and-swap commit, so of owners
// racing for the lease exactly one wins as before. On PostgreSQL, whose
// server outlives its clients' hosts, every record waits for the disk.
func leaseRecord(r ledger.Record) bool { return r.Turn == nil && r.Key == ledger.LeaseKey }

func (j *journal) Commit(ctx context.Context, r ledger.Record) error {
	if j.closed.Load() || j.s.closed.Load() {
		return fmt.Errorf("sqlstore: thread %s: %w", j.id, ledger.ErrClosed)
	}
	var turn []byte
	if r.Turn != nil {
		var err error
		if turn, err = r.Turn.MarshalJSON(); err != nil {
			return fmt.Errorf("encode: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, j.s.timeout)
	defer cancel()
	q := &j.s.q
	return j.s.writeSync(ctx, !leaseRecord(r), func(tx querier) error {
		added := 0
		if r.Turn != nil {
			added = 1
		}
		res, err := tx.ExecContext(ctx, q.bump, added, j.s.stamp(), j.id, j.inc, r.Version-1)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var inc string
			var version int64
			err := tx.QueryRowContext(ctx, q.threadVersion, j.id).Scan(&inc, &version)
			if errors.Is(err, sql.ErrNoRows) || (err == nil && inc != j.inc) {
				return fmt.Errorf("thread %s was deleted: %w", j.id, ledger.ErrNotFound)
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("thread %s is at version %d but this state last saw %d: another writer changed it: %w", j.id, version, r.Version-1, ledger.ErrConflict)
		}
		if r.Turn != nil {
			_, err = tx.ExecContext(ctx, q.insertTurn, j.id, r.Index, string(r.Turn.Role), string(turn))
		} else {
			_, err = tx.ExecContext(ctx, q.upsertMeta, j.id, r.Key, r.Value)
		}
		return err
	})
}

func (j *journal) Read(ctx context.Context) (ledger.Snapshot, error) {
	if j.closed.Load() || j.s.closed.Load() {
		return ledger.Snapshot{}, fmt.Errorf("sqlstore: thread %s: %w", j.id, ledger.ErrClosed)
	}
	return j.load(ctx, false)
}

// load reads the thread; first adopts whatever creation of it it finds,
// later reads insist on the same one.
func (j *journal) load(ctx context.Context, first bool) (ledger.Snapshot, error) {
	var snap ledger.Snapshot
	err := j.s.read(ctx, func(q querier) error {
		var inc string
		var turns int64
		err := q.QueryRowContext(ctx, j.s.q.threadHead, j.id).Scan(&inc, &snap.Version, &turns)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && !first && inc != j.inc) {
			return ledger.ErrNotFound
		}
		if err != nil {
			return err
		}
		j.inc = inc
		rows, err := q.QueryContext(ctx, j.s.q.loadTurns, j.id)
		if err != nil {
			return err
		}
		defer rows.Close()
		var seq int
		var data []byte
		for rows.Next() {
			if err := rows.Scan(&seq, &data); err != nil {
				return err
			}
			if seq != len(snap.Turns) {
				return fmt.Errorf("turn %d missing (found %d next): %w", len(snap.Turns), seq, ledger.ErrCorrupt)
			}
			if int64(seq) >= turns {
				return fmt.Errorf("turn %d is stored but the thread records %d turns: %w", seq, turns, ledger.ErrCorrupt)
			}
			var t ledger.Turn
			if err := t.UnmarshalJSON(data); err != nil {
				return fmt.Errorf("turn %d does not decode: %w: %w", seq, ledger.ErrCorrupt, err)
			}
			snap.Turns = append(snap.Turns, t)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if int64(len(snap.Turns)) < turns {
			return fmt.Errorf("turn %d missing (the thread records %d turns): %w", len(snap.Turns), turns, ledger.ErrCorrupt)
		}
		snap.Metadata = map[string]string{}
		mrows, err := q.QueryContext(ctx, j.s.q.loadMeta, j.id)
		if err != nil {
			return err
		}
		defer mrows.Close()
		for mrows.Next() {
			var k, v string
			if err := mrows.Scan(&k, &v); err != nil {
				return err
			}
			snap.Metadata[k] = v
		}
		return mrows.Err()
	})
	if err != nil {
		return ledger.Snapshot{}, fmt.Errorf("sqlstore: load %s: %w", j.id, err)
	}
	return snap, nil
}

func (j *journal) Close() error {
	j.closed.Store(true)
	return nil
}

// queries holds the statements in the dialect's placeholder style.
type queries struct {
	insertThread, insertTurn, upsertMeta     string
	bump, threadVersion, loadTurns, loadMeta string
	threadHead                               string
	deleteThread, deleteTurns, deleteMeta    string
	listThreads, listMeta, listTurnRows      string
}

func newQueries(d Dialect) queries {
	p := func(q string) string { return placeholders(d, q) }
	return queries{
		insertThread:  p(`INSERT INTO lode_threads (id, incarnation, version, turns, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		insertTurn:    p(`INSERT INTO lode_turns (thread_id, seq, role, turn) VALUES (?, ?, ?, ?)`),
		upsertMeta:    p(`INSERT INTO lode_metadata (thread_id, name, value) VALUES (?, ?, ?) ON CONFLICT (thread_id, name) DO UPDATE SET value = excluded.value`),
		bump:          p(`UPDATE lode_threads SET version = version + 1, turns = turns + ?, updated_at = ? WHERE id = ? AND incarnation = ? AND version = ?`),
		threadVersion: p(`SELECT incarnation, version FROM lode_threads WHERE id = ?`),
		threadHead:    p(`SELECT incarnation, version, turns FROM lode_threads WHERE id = ?`),
		loadTurns:     p(`SELECT seq, turn FROM lode_turns WHERE thread_id = ? ORDER BY seq`),
		loadMeta:      p(`SELECT name, value FROM lode_metadata WHERE thread_id = ?`),
		deleteThread:  p(`DELETE FROM lode_threads WHERE id = ?`),
		deleteTurns:   p(`DELETE FROM lode_turns WHERE thread_id = ?`),
		deleteMeta:    p(`DELETE FROM lode_metadata WHERE thread_id = ?`),
		listThreads:   p(`SELECT id, turns, created_at, updated_at FROM lode_threads WHERE id > ? ORDER BY id LIMIT ?`),
		listMeta:      p(`SELECT thread_id, name, value FROM lode_metadata WHERE thread_id >= ? AND thread_id <= ?`),
		listTurnRows:  p(`SELECT thread_id, COUNT(*), MIN(seq), MAX(seq) FROM lode_turns WHERE thread_id >= ? AND thread_id <= ? GROUP BY thread_id`),
	}
}

// placeholders rewrites ? to $1, $2, ... for PostgreSQL. The statements
// here hold no string literals, so every ? is a parameter.
func placeholders(d Dialect, q string) string {
	if d != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

var _ ledger.Store = (*Store)(nil)
