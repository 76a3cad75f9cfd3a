// Package sqlite keeps memory facts in a SQLite database, searched with
// its FTS5 full-text index (modernc.org/sqlite, pure Go, compiles FTS5 in)
// and ranked by FTS5's bm25.
//
// The index holds memory.Terms of each fact, not its raw text, so every
// store matches the same terms, and a search's MATCH expression is built
// from memory.QueryTerms, each one quoted: a query is never FTS5 syntax.
// Each indexed row also carries a token naming its scope (a hash of the
// tenant and user), which the MATCH requires, and the rows found are
// checked against the fact's tenant and user columns again. FTS5 ranks
// every fact of the scope that holds a query term before it takes the
// best: a search's cost grows with them (BENCHMARKS.md).
package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/lodeworks/lode/x/memory"
)

const schema = `
CREATE TABLE IF NOT EXISTS memory_facts (
	id     INTEGER PRIMARY KEY AUTOINCREMENT,
	tenant TEXT NOT NULL,
	"user" TEXT NOT NULL,
	text   TEXT NOT NULL,
	saved  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_facts_scope ON memory_facts (tenant, "user", id);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5 (scope, terms, tokenize = 'unicode61');
INSERT INTO memory_fts (memory_fts, rank) VALUES ('rank', 'bm25(0.0, 1.0)');
`

// Store is a memory.Store in a SQLite database.
type Store struct {
	db *sql.DB
}

var _ memory.Store = (*Store)(nil)

// Open opens (creating if needed) the SQLite database at path, which may be
// the same file as a ledger's, and creates the memory tables in it.
func Open(ctx context.Context, path string) (*Store, error) {
	// Transactions begin IMMEDIATE: a write waits for another writer's
	// lock (up to the busy timeout) instead of failing when a read turns
	// into a write.
	q := url.Values{"_pragma": {"busy_timeout(10000)", "synchronous(FULL)"}, "_txlock": {"immediate"}}
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode = WAL"); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: create the memory tables: %w", err)
	}
	return &Store{db: db}, nil
}

// scopeToken is the FTS5 token a scope's rows carry: letters and digits
// only.
func scopeToken(sc memory.Scope) string {
	b, _ := json.Marshal([]string{sc.Tenant, sc.User})
	h := sha256.Sum256(b)
	return "s" + hex.EncodeToString(h[:16])
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
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	defer tx.Rollback()
	fact, err := tx.PrepareContext(ctx, `INSERT INTO memory_facts (tenant, "user", text, saved) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	fts, err := tx.PrepareContext(ctx, `INSERT INTO memory_fts (rowid, scope, terms) VALUES (?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	now := time.Now().UTC()
	tok := scopeToken(sc)
	out := make([]memory.Fact, len(texts))
	for i, t := range texts {
		res, err := fact.ExecContext(ctx, sc.Tenant, sc.User, t, now.UnixNano())
		if err != nil {
			return nil, fmt.Errorf("sqlite: save a fact: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		if _, err := fts.ExecContext(ctx, id, tok, strings.Join(memory.Terms(t), " ")); err != nil {
			return nil, fmt.Errorf("sqlite: index a fact: %w", err)
		}
		out[i] = memory.Fact{ID: strconv.FormatInt(id, 10), Text: t, Saved: now}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return out, nil
}

// match builds the FTS5 expression for terms in the scope tok: every term
// is quoted, and holds letters and digits only.
func match(tok string, terms []string) string {
	var b strings.Builder
	b.WriteString(`scope : "` + tok + `" AND terms : (`)
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"` + t + `"`)
	}
	b.WriteString(")")
	return b.String()
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
	// FTS5 ranks inside the virtual table (its rank column, configured as
	// bm25 over the terms column only) and only the best rows are joined.
	rows, err := s.db.QueryContext(ctx, `
		SELECT f.id, f.text, f.saved, -m.rank
		FROM (SELECT rowid, rank FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rank LIMIT ?) AS m
		JOIN memory_facts f ON f.id = m.rowid
		WHERE f.tenant = ? AND f."user" = ?
		ORDER BY m.rank, f.id DESC`, match(scopeToken(sc), terms), memory.Limit(limit), sc.Tenant, sc.User)
	if err != nil {
		return nil, fmt.Errorf("sqlite: search: %w", err)
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
			saved int64
		)
		dest := []any{&id, &f.Text, &saved}
		if scored {
			dest = append(dest, &f.Score)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
		f.ID = strconv.FormatInt(id, 10)
		f.Saved = time.Unix(0, saved).UTC()
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
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
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM memory_facts WHERE id = ? AND tenant = ? AND "user" = ?`, n, sc.Tenant, sc.User)
	if err != nil {
		return fmt.Errorf("sqlite: forget: %w", err)
	}
	if k, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	} else if k == 0 {
		return memory.ErrNotFound
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM memory_fts WHERE rowid = ?`, n); err != nil {
		return fmt.Errorf("sqlite: forget: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}

// List implements memory.Store.
func (s *Store) List(ctx context.Context, sc memory.Scope) ([]memory.Fact, error) {
	if err := sc.Check(); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, text, saved FROM memory_facts WHERE tenant = ? AND "user" = ? ORDER BY id`, sc.Tenant, sc.User)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list: %w", err)
	}
	return scan(rows, false)
}

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}
