// Package postgres opens a ledger/sqlstore Store on a PostgreSQL database
// with the pgx driver (github.com/jackc/pgx/v5/stdlib).
package postgres
