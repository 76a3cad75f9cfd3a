package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
)

var errBadConn = driver.ErrBadConn

// SchemaVersion is the version of the tables this package writes.
const SchemaVersion = 3

// migrations[i] takes the schema from version i to i+1. {text} stands for
// the dialect's text type: byte-ordered in PostgreSQL ("C" collation), so
// that IDs sort as in SQLite and in the file store.
var migrations = [][]string{
	{
		`CREATE TABLE lode_threads (
			id {text} PRIMARY KEY,
			incarnation {text} NOT NULL,
			version BIGINT NOT NULL,
			turns BIGINT NOT NULL,
			created_at BIGINT NOT NULL,
			updated_at BIGINT NOT NULL
		)`,
		`CREATE TABLE lode_turns (
			thread_id {text} NOT NULL,
			seq BIGINT NOT NULL,
			role {text} NOT NULL,
			turn {text} NOT NULL,
			PRIMARY KEY (thread_id, seq)
		)`,
		`CREATE TABLE lode_metadata (
			thread_id {text} NOT NULL,
			name {text} NOT NULL,
			value {text} NOT NULL,
			PRIMARY KEY (thread_id, name)
		)`,
	},
	{
		// Counters shared by every store over the database (ledger.Counter).
		`CREATE TABLE lode_counters (
			name {text} PRIMARY KEY,
			value BIGINT NOT NULL
		)`,
	},
	{
		// A fork's base (see Store.Fork): the thread whose turns below
		// base_len it reads as its own; '' for a thread with rows for all
		// its turns, as every thread of an older schema has.
		`ALTER TABLE lode_threads ADD COLUMN base_id {text} NOT NULL DEFAULT ''`,
		`ALTER TABLE lode_threads ADD COLUMN base_len BIGINT NOT NULL DEFAULT 0`,
		`CREATE INDEX lode_threads_base ON lode_threads (base_id)`,
	},
}

// migrate brings the schema to SchemaVersion in one transaction, under a
// lock, so that stores opening the same database at once do it once.
func (s *Store) migrate(ctx context.Context) error {
	text := "TEXT"
	if s.dialect == Postgres {
		text = `TEXT COLLATE "C"`
	}
	return s.write(ctx, func(q querier) error {
		if s.dialect == Postgres {
			// Serialises concurrent migrations; released at commit.
			if _, err := q.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7465646572)`); err != nil {
				return fmt.Errorf("lock schema: %w", err)
			}
		}
		if _, err := q.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS lode_schema (version INTEGER NOT NULL)`); err != nil {
			return fmt.Errorf("create schema table: %w", err)
		}
		var have int
		err := q.QueryRowContext(ctx, `SELECT version FROM lode_schema`).Scan(&have)
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := q.ExecContext(ctx, `INSERT INTO lode_schema (version) VALUES (0)`); err != nil {
				return fmt.Errorf("init schema version: %w", err)
			}
		} else if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if have > len(migrations) {
			return fmt.Errorf("the database has schema version %d, newer than the %d this version of lode knows: upgrade lode", have, len(migrations))
		}
		for v := have; v < len(migrations); v++ {
			for _, stmt := range migrations[v] {
				if _, err := q.ExecContext(ctx, strings.ReplaceAll(stmt, "{text}", text)); err != nil {
					return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
				}
			}
		}
		if have < len(migrations) {
			if _, err := q.ExecContext(ctx, placeholders(s.dialect, `UPDATE lode_schema SET version = ?`), len(migrations)); err != nil {
				return fmt.Errorf("record schema version: %w", err)
			}
		}
		return nil
	})
}
