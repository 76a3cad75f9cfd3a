package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/lodeworks/lode/ledger"
)

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
	return j.s.commit(ctx, j.id, !leaseRecord(r), func(ctx context.Context, tx querier) error {
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
				return refuse(fmt.Errorf("thread %s was deleted: %w", j.id, ledger.ErrNotFound))
			}
			if err != nil {
				return err
			}
			return refuse(fmt.Errorf("thread %s is at version %d but this state last saw %d: another writer changed it: %w", j.id, version, r.Version-1, ledger.ErrConflict))
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
