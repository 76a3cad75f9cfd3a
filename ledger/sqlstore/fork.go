package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/lodeworks/lode/ledger"
)

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
