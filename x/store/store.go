package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/ledger/sqlstore"
	"github.com/lodeworks/lode/ledger/sqlstore/postgres"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
)

// Store is what Open returns: a ledger.Store that keeps counters too.
// lode's file, SQLite and PostgreSQL stores are all both.
type Store interface {
	ledger.Store
	ledger.Counter
}

// Kind is which store a spec names.
type Kind int

const (
	// File is a folder of journals (ledger/file).
	File Kind = iota
	// SQLite is a database file (ledger/sqlstore/sqlite).
	SQLite
	// Postgres is a PostgreSQL database (ledger/sqlstore/postgres).
	Postgres
)

func (k Kind) String() string {
	switch k {
	case File:
		return "file"
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Errors Parse and Open report, wrapped in a message that says what to
// do; test for them with errors.Is.
var (
	// ErrSpec: the spec names no store lode knows.
	ErrSpec = errors.New("store: invalid store spec")
	// ErrPassword: a PostgreSQL URL carries a password.
	ErrPassword = errors.New("store: a password in the store spec")
)

// sqlitePrefix starts a SQLite spec.
const sqlitePrefix = "sqlite:"

// Spec is a parsed store spec.
type Spec struct {
	Kind Kind
	// Path is the folder (File) or the database file (SQLite), as given.
	Path string
	// URL is the PostgreSQL URL (Postgres), as given; it has no password.
	URL string
}

// String is the spec as a user writes it, to be pasted back into --store
// or store: (it never holds a password: Parse refuses one).
func (s Spec) String() string {
	switch s.Kind {
	case SQLite:
		return sqlitePrefix + s.Path
	case Postgres:
		return s.URL
	}
	return s.Path
}

const forms = "want a folder, sqlite:PATH or postgres://USER@HOST/DB"

// Parse reads a spec: a folder, sqlite:PATH, or a postgres:// or
// postgresql:// URL without a password.
func Parse(spec string) (Spec, error) {
	s := strings.TrimSpace(spec)
	if s == "" {
		return Spec{}, fmt.Errorf("%w: the spec is empty: %s", ErrSpec, forms)
	}
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, sqlitePrefix):
		path := s[len(sqlitePrefix):]
		switch {
		case path == "":
			return Spec{}, fmt.Errorf("%w %q: no file after sqlite:; write sqlite:PATH, e.g. sqlite:.lode/threads.db", ErrSpec, spec)
		case path == ":memory:" || strings.HasPrefix(path, "file::memory:"):
			return Spec{}, fmt.Errorf("%w %q: an in-memory SQLite database keeps nothing; leave the store out to keep threads in memory", ErrSpec, spec)
		case strings.HasPrefix(path, "//"):
			return Spec{}, fmt.Errorf("%w %q: write sqlite:PATH with the path as is (sqlite:/var/lib/lode/threads.db), not a URL", ErrSpec, spec)
		case strings.ContainsAny(path, "?#"):
			return Spec{}, fmt.Errorf("%w %q: a SQLite path takes no '?' or '#'; lode sets the database's options itself", ErrSpec, spec)
		}
		return Spec{Kind: SQLite, Path: path}, nil
	case strings.HasPrefix(lower, "postgres:"), strings.HasPrefix(lower, "postgresql:"):
		return parsePostgres(spec, s)
	}
	if scheme, _, ok := strings.Cut(s, "://"); ok && scheme != "" && !strings.ContainsAny(scheme, `/\`) {
		return Spec{}, fmt.Errorf("%w %q: unknown kind of store %q: %s", ErrSpec, spec, scheme, forms)
	}
	return Spec{Kind: File, Path: s}, nil
}

func parsePostgres(spec, s string) (Spec, error) {
	u, err := url.Parse(s)
	if err != nil {
		// url.Error quotes the whole URL, which may hold a password.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Spec{}, fmt.Errorf("%w %q: not a URL (%v): write postgres://USER@HOST:PORT/DB", ErrSpec, redact(spec), err)
	}
	if u.Opaque != "" || u.Host == "" && u.Path == "" && u.RawQuery == "" {
		return Spec{}, fmt.Errorf("%w %q: write postgres://USER@HOST:PORT/DB", ErrSpec, redact(spec))
	}
	if _, ok := u.User.Password(); ok || hasParam(u, "password") || hasParam(u, "sslpassword") {
		return Spec{}, fmt.Errorf("%w %q: lode does not take the password from the store setting, which is printed, kept in lode.yaml and shell history, and visible to other users in the process list; "+
			"drop it from the URL and set PGPASSWORD, or put it in ~/.pgpass (or the file PGPASSFILE names)", ErrPassword, redact(spec))
	}
	return Spec{Kind: Postgres, URL: s}, nil
}

func hasParam(u *url.URL, name string) bool {
	for k := range u.Query() {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// redact hides the password of a URL for an error message; text that is
// not a URL is cut at its first '@', after which a password cannot hide.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if i := strings.LastIndex(s, "@"); i >= 0 {
			if j := strings.Index(s, "://"); j >= 0 && j < i {
				return s[:j+3] + "…" + s[i:]
			}
		}
		return s
	}
	changed := false
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
		changed = true
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
			q.Set(k, "xxxxx")
			changed = true
		}
	}
	if !changed {
		return s
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Option configures Open.
type Option func(*config)

type config struct {
	file   []file.Option
	sqlite []sqlite.Option
	sql    []sqlstore.Option
}

// WithFileOptions passes options to file.Open when the spec is a folder.
func WithFileOptions(opts ...file.Option) Option {
	return func(c *config) { c.file = append(c.file, opts...) }
}

// WithSQLiteOptions passes options to sqlite.Open when the spec is
// sqlite:PATH.
func WithSQLiteOptions(opts ...sqlite.Option) Option {
	return func(c *config) { c.sqlite = append(c.sqlite, opts...) }
}

// WithSQLOptions passes options to sqlstore.Open, for SQLite and
// PostgreSQL specs both.
func WithSQLOptions(opts ...sqlstore.Option) Option {
	return func(c *config) { c.sql = append(c.sql, opts...) }
}

// Open opens the store spec names (see Parse), creating the folder, the
// SQLite file or the tables when missing. A PostgreSQL database is
// reached once before Open returns, so that a wrong host, user or
// password is reported here, with what to check.
func Open(ctx context.Context, spec string, opts ...Option) (Store, error) {
	sp, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	return sp.Open(ctx, opts...)
}

// Open opens the store s names.
func (s Spec) Open(ctx context.Context, opts ...Option) (Store, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	switch s.Kind {
	case File:
		st, err := file.Open(s.Path, c.file...)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w: check that the folder can be created and written", s, err)
		}
		return st, nil
	case SQLite:
		if dir := filepath.Dir(s.Path); dir != "." {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("store: %s: %w: check that the folder can be created", s, err)
			}
		}
		st, err := sqlite.Open(ctx, s.Path, append(c.sqlite, sqlite.WithStoreOptions(c.sql...))...)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w: check that the file is a SQLite database lode can write", s, err)
		}
		return st, nil
	case Postgres:
		st, err := postgres.Open(ctx, s.URL, c.sql...)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w: check the host, user and database in the URL, and that PGPASSWORD or ~/.pgpass gives the password", s, err)
		}
		return st, nil
	}
	return nil, fmt.Errorf("%w: kind %s", ErrSpec, s.Kind)
}
