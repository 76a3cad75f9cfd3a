package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/lodeworks/lode/ledger/sqlstore"
)

// pragmas are applied to every connection.
var pragmas = []string{
	"busy_timeout(10000)",
	"journal_mode(WAL)",
	"synchronous(FULL)",
}

// DSN returns the data source name Open uses for the database file at path.
func DSN(path string) string {
	q := url.Values{"_pragma": pragmas}
	return path + "?" + q.Encode()
}

// Open opens (creating if needed) the SQLite database at path and returns a
// Store over it that closes the database when it is closed.
func Open(ctx context.Context, path string, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("ledger/sqlstore/sqlite: open %q: want a file path without '?' or '#'", path)
	}
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlstore/sqlite: open %s: %w", path, err)
	}
	s, err := sqlstore.Open(ctx, db, sqlstore.SQLite, append([]sqlstore.Option{sqlstore.WithCloseDB()}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("ledger/sqlstore/sqlite: %s: %w", path, err)
	}
	return s, nil
}
