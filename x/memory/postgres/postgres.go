// Package postgres keeps memory facts in a PostgreSQL database, searched
// with its text search: a stored tsvector of each fact's memory.Terms under
// the 'simple' configuration, a GIN index, and ts_rank.
//
// A search's tsquery is the OR of memory.QueryTerms, each quoted, passed
// to to_tsquery as a parameter: a query is never SQL or tsquery syntax.
// Every statement is bound to the scope's tenant and user columns.
//
// ts_rank weighs how often a fact holds the query's terms, not how rare
// they are (it has no inverse document frequency, unlike the file store's
// BM25 and SQLite's bm25); on the generated questions of BENCHMARKS.md its
// recall matches theirs. A search ranks every fact of the scope that holds
// a query term before it takes the best: its cost grows with them.
package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lodeworks/lode/x/memory"
)

const schema = `
CREATE TABLE IF NOT EXISTS memory_facts (
	id     BIGSERIAL PRIMARY KEY,
	tenant TEXT NOT NULL,
	"user" TEXT NOT NULL,
	text   TEXT NOT NULL,
	terms  TEXT NOT NULL,
	saved  TIMESTAMPTZ NOT NULL,
	tsv    TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED
);
CREATE INDEX IF NOT EXISTS memory_facts_scope ON memory_facts (tenant, "user", id);
CREATE INDEX IF NOT EXISTS memory_facts_tsv ON memory_facts USING GIN (tsv);
`

// Store is a memory.Store in a PostgreSQL database.
type Store struct {
	db *sql.DB
}

var _ memory.Store = (*Store)(nil)

// Open connects to the database dsn names (a URL or key=value string, as
// libpq takes), which may be a ledger's, and creates the memory tables in
// it.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	// Two processes creating the tables at once would race; an advisory
	// lock orders them.
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close()
	const lock = 0x6c6f64656d656d // "lodemem"
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, lock); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	_, err = conn.ExecContext(ctx, schema)
	if _, uerr := conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, lock); err == nil {
		err = uerr
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: create the memory tables: %w", err)
	}
	return &Store{db: db}, nil
}

// Save implements memory.Store.
func (s *Store) Save(ctx context.Context, sc memory.Scope, texts ...string) ([]memory.Fact, error) {
	if err := sc.Check(); err != nil {
		return nil, err
	}
	for _, t := range texts {
		if err := memory.CheckFact(t); err != nil {
			return nil, err
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO memory_facts (tenant, "user", text, terms, saved) VALUES ($1, $2, $3, $4, $5) RETURNING id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	out := make([]memory.Fact, len(texts))
	for i, t := range texts {
		var id int64
		// PostgreSQL text holds no NUL; the fact keeps it, the terms never do.
		if err := stmt.QueryRowContext(ctx, sc.Tenant, sc.User, t, strings.Join(memory.Terms(t), " "), now).Scan(&id); err != nil {
			return nil, fmt.Errorf("postgres: save a fact: %w", err)
		}
		out[i] = memory.Fact{ID: strconv.FormatInt(id, 10), Text: t, Saved: now}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return out, nil
}

// tsquery builds the OR of terms, each quoted; a term holds letters and
// digits only.
func tsquery(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = "'" + t + "'"
	}
	return strings.Join(q, " | ")
}

// Search implements memory.Store.
func (s *Store) Search(ctx context.Context, sc memory.Scope, query string, limit int) ([]memory.Fact, error) {
	if err := sc.Check(); err != nil {
		return nil, err
	}
	terms := memory.QueryTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT id, text, saved, ts_rank(tsv, q) AS score
		FROM memory_facts, to_tsquery('simple', $1) AS q
		WHERE tenant = $2 AND "user" = $3 AND tsv @@ q
		ORDER BY score DESC, id DESC
		LIMIT $4`, tsquery(terms), sc.Tenant, sc.User, memory.Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("postgres: search: %w", err)
	}
	return scan(rows, true)
}

func scan(rows *sql.Rows, scored bool) ([]memory.Fact, error) {
	defer rows.Close()
	var out []memory.Fact
	for rows.Next() {
		var (
			id    int64
			f     memory.Fact
			score float32
		)
		dest := []any{&id, &f.Text, &f.Saved}
		if scored {
			dest = append(dest, &score)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		f.ID = strconv.FormatInt(id, 10)
		f.Saved = f.Saved.UTC()
		f.Score = float64(score)
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return out, nil
}

// Forget implements memory.Store.
func (s *Store) Forget(ctx context.Context, sc memory.Scope, id string) error {
	if err := sc.Check(); err != nil {
		return err
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != id {
		return memory.ErrNotFound
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM memory_facts WHERE id = $1 AND tenant = $2 AND "user" = $3`, n, sc.Tenant, sc.User)
	if err != nil {
		return fmt.Errorf("postgres: forget: %w", err)
	}
	if k, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	} else if k == 0 {
		return memory.ErrNotFound
	}
	return nil
}

// List implements memory.Store.
func (s *Store) List(ctx context.Context, sc memory.Scope) ([]memory.Fact, error) {
	if err := sc.Check(); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, text, saved FROM memory_facts WHERE tenant = $1 AND "user" = $2 ORDER BY id`, sc.Tenant, sc.User)
	if err != nil {
		return nil, fmt.Errorf("postgres: list: %w", err)
	}
	return scan(rows, false)
}

// Close closes the connection pool.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}
