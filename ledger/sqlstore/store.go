package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"slices"
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
		res, err := q.ExecContext(ctx, s.q.insertThread, id, inc, snap.Version, len(rows), now, now, "", 0)
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
//
// The forks that share the thread's turns (see Fork) keep them: in the
// same transaction, each gets a copy of the deleted thread's own rows it
// reads, and then shares what the deleted thread shared, if anything. So
// deleting a parent costs, per fork of it, a copy of the turns that fork
// kept from it, done by the database (INSERT … SELECT), and nothing when
// no fork shares its turns.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.check("delete", ctx); err != nil {
		return err
	}
	if err := ledger.CheckID(id); err != nil {
		return fmt.Errorf("sqlstore: delete: %w", err)
	}
	err := s.write(ctx, func(q querier) error {
		if err := s.lockForks(ctx, q); err != nil {
			return err
		}
		var base string
		var baseLen int64
		err := q.QueryRowContext(ctx, s.q.threadBase, id).Scan(&base, &baseLen)
		if errors.Is(err, sql.ErrNoRows) {
			return ledger.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := s.unshare(ctx, q, id, base, baseLen); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, s.q.deleteThread, id); err != nil {
			return err
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

// unshare gives each fork whose base is id, a thread about to be deleted
// whose own rows start at baseLen over its own base, the rows of id it
// reads, and rebases it on base.
func (s *Store) unshare(ctx context.Context, q querier, id, base string, baseLen int64) error {
	rows, err := q.QueryContext(ctx, s.q.forksOf, id)
	if err != nil {
		return err
	}
	type fork struct {
		id  string
		cut int64
	}
	var forks []fork
	for rows.Next() {
		var f fork
		if err := rows.Scan(&f.id, &f.cut); err != nil {
			rows.Close()
			return err
		}
		forks = append(forks, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if base == "" {
		baseLen = 0
	}
	for _, f := range forks {
		if f.cut <= baseLen {
			return fmt.Errorf("fork %s shares %d turns but its base's own start at %d: %w", f.id, f.cut, baseLen, ledger.ErrCorrupt)
		}
		if _, err := q.ExecContext(ctx, s.q.copyTurns, f.id, id, baseLen, f.cut); err != nil {
			return fmt.Errorf("copy the turns fork %s shares: %w", f.id, err)
		}
		if _, err := q.ExecContext(ctx, s.q.rebase, base, baseLen, f.id); err != nil {
			return fmt.Errorf("rebase fork %s: %w", f.id, err)
		}
	}
	return nil
}

// forkLockKey names the PostgreSQL advisory lock that Fork and Delete
// take: a fork reads its parent's base chain and adds a thread that shares
// it, a delete moves the forks off the thread it deletes, and neither may
// see the other half done.
const forkLockKey = 7465646573

// lockForks serialises Fork and Delete; SQLite's write transactions are
// serial already.
func (s *Store) lockForks(ctx context.Context, q querier) error {
	if s.dialect != Postgres {
		return nil
	}
	_, err := q.ExecContext(ctx, `SELECT pg_advisory_xact_lock(`+strconv.Itoa(forkLockKey)+`)`)
	return err
}

// Fork makes req.ID a fork of req.Parent that shares the parent's turns
// rather than copying them (ledger.Forker): its row records a base, the
// thread whose rows hold its turns below the cut, and the cut, and it has
// rows of its own only for the turns appended to it. The base is whichever
// thread of the parent's chain holds the parent's turn at the cut, so a
// fork of a fork of a fork reads its turns from one thread or another,
// never through a chain longer than the threads that hold them.
//
// The transaction reads the parent's kept turns (to check the cut) and
// writes one thread row and its metadata, whatever the number of turns;
// a crash leaves no fork or a whole one. Turn rows are never changed once
// written, so appends to the parent do not reach the fork; Delete copies
// what a fork shares into it before the rows go.
func (s *Store) Fork(ctx context.Context, req ledger.ForkRequest) (*ledger.StoredThread, error) {
	if err := s.check("fork", ctx); err != nil {
		return nil, err
	}
	if err := ledger.CheckID(req.Parent); err != nil {
		return nil, fmt.Errorf("sqlstore: fork: %w", err)
	}
	if err := ledger.CheckID(req.ID); err != nil {
		return nil, fmt.Errorf("sqlstore: fork %s: %w", req.Parent, err)
	}
	inc := ledger.NewID()
	now := s.stamp()
	var snap ledger.Snapshot
	var planErr error
	err := s.write(ctx, func(q querier) error {
		if err := s.lockForks(ctx, q); err != nil {
			return err
		}
		h, err := s.readHead(ctx, q, req.Parent)
		if err != nil {
			return err
		}
		chain, err := s.chain(ctx, q, h)
		if err != nil {
			return err
		}
		var kept []ledger.Turn
		at := int64(req.At)
		if at >= 0 && at <= h.turns {
			if kept, err = s.readTurns(ctx, q, chain, at, false); err != nil {
				return err
			}
		}
		meta, err := s.readMeta(ctx, q, req.Parent)
		if err != nil {
			return err
		}
		if meta, planErr = req.Plan(kept, int(h.turns), meta); planErr != nil {
			return planErr
		}
		base := ""
		for _, c := range chain {
			if c.from < at && at <= c.to {
				base = c.id
			}
		}
		res, err := q.ExecContext(ctx, s.q.insertThread, req.ID, inc, at, at, now, now, base, at)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("thread %q already exists: %w", req.ID, ledger.ErrConflict)
		}
		for k, v := range meta {
			if _, err := q.ExecContext(ctx, s.q.upsertMeta, req.ID, k, v); err != nil {
				return err
			}
		}
		snap = ledger.Snapshot{Version: at, Turns: kept, Metadata: meta}
		return nil
	})
	if planErr != nil {
		return nil, planErr // the ledger's, as Plan words it
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: fork %s as %s: %w", req.Parent, req.ID, err)
	}
	return ledger.NewStoredThread(req.ID, snap, &journal{s: s, id: req.ID, inc: inc}, s.now), nil
}

// head is a thread's row.
type head struct {
	id, inc string
	version int64
	turns   int64
	base    string
	baseLen int64
}

func (s *Store) readHead(ctx context.Context, q querier, id string) (head, error) {
	h := head{id: id}
	err := q.QueryRowContext(ctx, s.q.threadHead, id).Scan(&h.inc, &h.version, &h.turns, &h.base, &h.baseLen)
	if errors.Is(err, sql.ErrNoRows) {
		return head{}, ledger.ErrNotFound
	}
	return h, err
}

// segment is the run of a thread's turns, from to to (exclusive), that
// one thread's own rows hold.
type segment struct {
	id       string
	from, to int64
}

// chain returns where the turns of the thread h are, oldest first: the
// rows of its base chain up to each cut, then its own.
func (s *Store) chain(ctx context.Context, q querier, h head) ([]segment, error) {
	if h.baseLen > h.turns || h.baseLen < 0 || (h.base == "") != (h.baseLen == 0) {
		return nil, fmt.Errorf("thread %s records %d turns and a base %q of %d: %w", h.id, h.turns, h.base, h.baseLen, ledger.ErrCorrupt)
	}
	segs := []segment{{id: h.id, from: h.baseLen, to: h.turns}}
	seen := map[string]bool{h.id: true}
	for cur, to := h.base, h.baseLen; cur != ""; {
		if seen[cur] {
			return nil, fmt.Errorf("thread %s: its base chain comes back to %s: %w", h.id, cur, ledger.ErrCorrupt)
		}
		seen[cur] = true
		b, err := s.readHead(ctx, q, cur)
		if errors.Is(err, ledger.ErrNotFound) {
			return nil, fmt.Errorf("thread %s: base thread %s is missing: %w", h.id, cur, ledger.ErrCorrupt)
		}
		if err != nil {
			return nil, err
		}
		if to > b.turns || b.baseLen >= to || (b.base == "") != (b.baseLen == 0) {
			return nil, fmt.Errorf("thread %s: base thread %s has %d turns from %d, not the %d it shares: %w", h.id, cur, b.turns, b.baseLen, to, ledger.ErrCorrupt)
		}
		segs = append(segs, segment{id: cur, from: b.baseLen, to: to})
		cur, to = b.base, b.baseLen
	}
	slices.Reverse(segs)
	return segs, nil
}

// readTurns reads the first n turns of the thread whose chain is segs,
// checking that the rows are numbered without a gap. With whole, the rows
// of the last segment must also stop at its end, as its thread records;
// a read outside one snapshot (a PostgreSQL write transaction) may see
// turns appended since the thread's row was read, and passes false.
func (s *Store) readTurns(ctx context.Context, q querier, segs []segment, n int64, whole bool) ([]ledger.Turn, error) {
	turns := make([]ledger.Turn, 0, min(n, 1<<12)) // n is read, not trusted
	for i, sg := range segs {
		if sg.from >= n {
			break
		}
		end := min(sg.to, n)
		var rows *sql.Rows
		var err error
		if whole && i == len(segs)-1 && end == sg.to {
			// The thread's own rows, read whole: any row past its turns
			// is damage.
			rows, err = q.QueryContext(ctx, s.q.loadOwnTurns, sg.id, sg.from)
		} else {
			rows, err = q.QueryContext(ctx, s.q.loadTurnRange, sg.id, sg.from, end)
		}
		if err != nil {
			return nil, err
		}
		err = func() error {
			defer rows.Close()
			var seq int64
			var data []byte
			for rows.Next() {
				if err := rows.Scan(&seq, &data); err != nil {
					return err
				}
				if seq != int64(len(turns)) {
					return fmt.Errorf("turn %d missing (found %d next): %w", len(turns), seq, ledger.ErrCorrupt)
				}
				if seq >= sg.to {
					return fmt.Errorf("turn %d is stored but the thread records %d turns: %w", seq, sg.to, ledger.ErrCorrupt)
				}
				var t ledger.Turn
				if err := t.UnmarshalJSON(data); err != nil {
					return fmt.Errorf("turn %d does not decode: %w: %w", seq, ledger.ErrCorrupt, err)
				}
				turns = append(turns, t)
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, err
		}
		if int64(len(turns)) < end {
			return nil, fmt.Errorf("turn %d missing (the thread records %d turns): %w", len(turns), sg.to, ledger.ErrCorrupt)
		}
	}
	return turns, nil
}

func (s *Store) readMeta(ctx context.Context, q querier, id string) (map[string]string, error) {
	meta := map[string]string{}
	rows, err := q.QueryContext(ctx, s.q.loadMeta, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		meta[k] = v
	}
	return meta, rows.Err()
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
	info    ledger.ThreadInfo
	baseLen int64 // the turns it shares with its base
	err     error
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
			var l listed
			var created, updated int64
			if err := rows.Scan(&info.ID, &info.Turns, &created, &updated, &l.baseLen); err != nil {
				return err
			}
			info.Created, info.Updated = fromNanos(created), fromNanos(updated)
			info.Metadata = map[string]string{}
			l.info = info
			at[info.ID] = len(page)
			page = append(page, l)
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
			if msg := checkTurnRows(page[i].baseLen, int64(info.Turns), found[info.ID]); msg != "" {
				page[i].err = fmt.Errorf("sqlstore: list %s: %s: %w", info.ID, msg, ledger.ErrCorrupt)
			}
		}
		return nil
	})
	return page, err
}

// checkTurnRows says what is wrong when a thread that records turns turns,
// the first from of them its base's, does not have exactly the rows from
// to turns-1; "" when nothing is.
func checkTurnRows(from, turns int64, r turnRows) string {
	own := turns - from
	if r.count == own && (own == 0 || r.min == from && r.max == turns-1) {
		return ""
	}
	shared := ""
	if from > 0 {
		shared = fmt.Sprintf(" (%d of them its base's)", from)
	}
	if r.count == 0 {
		return fmt.Sprintf("the thread records %d turns%s but no turn rows are stored", turns, shared)
	}
	return fmt.Sprintf("the thread records %d turns%s but %d turn rows are stored, numbered %d to %d", turns, shared, r.count, r.min, r.max)
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
		h, err := j.s.readHead(ctx, q, j.id)
		if err == nil && !first && h.inc != j.inc {
			err = ledger.ErrNotFound
		}
		if err != nil {
			return err
		}
		j.inc = h.inc
		snap.Version = h.version
		segs, err := j.s.chain(ctx, q, h)
		if err != nil {
			return err
		}
		if snap.Turns, err = j.s.readTurns(ctx, q, segs, h.turns, true); err != nil {
			return err
		}
		snap.Metadata, err = j.s.readMeta(ctx, q, j.id)
		return err
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
	insertThread, insertTurn, upsertMeta  string
	bump, threadVersion, loadMeta         string
	threadHead, threadBase                string
	loadOwnTurns, loadTurnRange           string
	forksOf, copyTurns, rebase            string
	deleteThread, deleteTurns, deleteMeta string
	listThreads, listMeta, listTurnRows   string
}

func newQueries(d Dialect) queries {
	p := func(q string) string { return placeholders(d, q) }
	return queries{
		insertThread:  p(`INSERT INTO lode_threads (id, incarnation, version, turns, created_at, updated_at, base_id, base_len) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		insertTurn:    p(`INSERT INTO lode_turns (thread_id, seq, role, turn) VALUES (?, ?, ?, ?)`),
		upsertMeta:    p(`INSERT INTO lode_metadata (thread_id, name, value) VALUES (?, ?, ?) ON CONFLICT (thread_id, name) DO UPDATE SET value = excluded.value`),
		bump:          p(`UPDATE lode_threads SET version = version + 1, turns = turns + ?, updated_at = ? WHERE id = ? AND incarnation = ? AND version = ?`),
		threadVersion: p(`SELECT incarnation, version FROM lode_threads WHERE id = ?`),
		threadHead:    p(`SELECT incarnation, version, turns, base_id, base_len FROM lode_threads WHERE id = ?`),
		threadBase:    p(`SELECT base_id, base_len FROM lode_threads WHERE id = ?`),
		loadOwnTurns:  p(`SELECT seq, turn FROM lode_turns WHERE thread_id = ? AND seq >= ? ORDER BY seq`),
		loadTurnRange: p(`SELECT seq, turn FROM lode_turns WHERE thread_id = ? AND seq >= ? AND seq < ? ORDER BY seq`),
		forksOf:       p(`SELECT id, base_len FROM lode_threads WHERE base_id = ?`),
		copyTurns:     p(`INSERT INTO lode_turns (thread_id, seq, role, turn) SELECT ?, seq, role, turn FROM lode_turns WHERE thread_id = ? AND seq >= ? AND seq < ?`),
		rebase:        p(`UPDATE lode_threads SET base_id = ?, base_len = ? WHERE id = ?`),
		loadMeta:      p(`SELECT name, value FROM lode_metadata WHERE thread_id = ?`),
		deleteThread:  p(`DELETE FROM lode_threads WHERE id = ?`),
		deleteTurns:   p(`DELETE FROM lode_turns WHERE thread_id = ?`),
		deleteMeta:    p(`DELETE FROM lode_metadata WHERE thread_id = ?`),
		listThreads:   p(`SELECT id, turns, created_at, updated_at, base_len FROM lode_threads WHERE id > ? ORDER BY id LIMIT ?`),
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

var (
	_ ledger.Store  = (*Store)(nil)
	_ ledger.Forker = (*Store)(nil)
)
