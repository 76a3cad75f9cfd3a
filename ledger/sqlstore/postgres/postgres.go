package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lodeworks/lode/ledger/sqlstore"
)

// DefaultMaxConns is how many connections the store's pool opens at most
// when the DSN's pool_max_conns does not say.
const DefaultMaxConns = 16

// Open connects to the database dsn names (a URL or key=value string, as
// libpq takes) and returns a Store over it that closes the connection pool
// when it is closed.
//
// The pool holds at most pool_max_conns connections (a DSN parameter, as
// pgxpool names it; DefaultMaxConns without it) and keeps them open when
// idle: more requests than that wait their turn for a connection, in
// order, instead of each opening one, which under load would start a
// server process per transaction and run into the server's
// max_connections.
func Open(ctx context.Context, dsn string, opts ...sqlstore.Option) (*sqlstore.Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	conns := DefaultMaxConns
	if v, ok := cfg.RuntimeParams["pool_max_conns"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("postgres: pool_max_conns=%q: want a count of 1 or more", v)
		}
		conns = n
		delete(cfg.RuntimeParams, "pool_max_conns")
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	s, err := sqlstore.Open(ctx, db, sqlstore.Postgres, append([]sqlstore.Option{sqlstore.WithCloseDB()}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return s, nil
}
