package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/lodeworks/lode/ledger"
)

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
