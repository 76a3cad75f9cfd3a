package sqlstore

import (
	"context"
	"fmt"

	"github.com/lodeworks/lode/ledger"
)

// AddCounter adds delta to the counter name under limit (ledger.Counter),
// in one write transaction: SQLite's takes the database's write lock, and
// PostgreSQL's locks the counter's row, so concurrent adds from any number
// of stores over the database are applied one after another.
func (s *Store) AddCounter(ctx context.Context, name string, delta, limit int64) (total int64, ok bool, err error) {
	if err := s.check("add counter", ctx); err != nil {
		return 0, false, err
	}
	if err := ledger.CheckCounterName(name); err != nil {
		return 0, false, fmt.Errorf("sqlstore: add counter %q: %w", name, err)
	}
	err = s.write(ctx, func(q querier) error {
		if _, err := q.ExecContext(ctx, placeholders(s.dialect, `INSERT INTO lode_counters (name, value) VALUES (?, 0) ON CONFLICT (name) DO NOTHING`), name); err != nil {
			return err
		}
		sel := `SELECT value FROM lode_counters WHERE name = ?`
		if s.dialect == Postgres {
			sel += ` FOR UPDATE`
		}
		if err := q.QueryRowContext(ctx, placeholders(s.dialect, sel), name).Scan(&total); err != nil {
			return err
		}
		if limit >= 0 && total+delta > limit {
			return nil
		}
		total, ok = total+delta, true
		_, err := q.ExecContext(ctx, placeholders(s.dialect, `UPDATE lode_counters SET value = ? WHERE name = ?`), total, name)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("sqlstore: add counter %q: %w", name, err)
	}
	return total, ok, nil
}

var _ ledger.Counter = (*Store)(nil)
