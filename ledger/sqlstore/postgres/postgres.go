package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lodeworks/lode/ledger/sqlstore"
)

// Open connects to the database dsn names (a URL or key=value string, as
// libpq takes) and returns a Store over it that closes the connection pool
// when it is closed.
func Open(ctx context.Context, dsn string, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	s, err := sqlstore.Open(ctx, db, sqlstore.Postgres, append([]sqlstore.Option{sqlstore.WithCloseDB()}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return s, nil
}
