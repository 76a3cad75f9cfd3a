package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/ledgertest"
	"github.com/lodeworks/lode/ledger/sqlstore"
	"github.com/lodeworks/lode/ledger/sqlstore/internal/sqltest"
	"github.com/lodeworks/lode/ledger/sqlstore/postgres"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func open(t testing.TB, dsn string, opts ...sqlstore.Option) *sqlstore.Store {
	s, err := postgres.Open(context.Background(), dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func rawDB(t testing.TB, dsn string) *sql.DB {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestContract(t *testing.T) {
	srv := pgtest.Shared(t)
	ledgertest.Run(t, func(t testing.TB) ledgertest.Opener {
		dsn := srv.NewDatabase(t)
		return func(t testing.TB) ledger.Store { return open(t, dsn) }
	})
}

// A lost turn row is listed as damage, not as a shorter thread.
func TestContractDamaged(t *testing.T) {
	srv := pgtest.Shared(t)
	ledgertest.RunDamaged(t, func(t testing.TB) (ledgertest.Opener, ledgertest.Damage) {
		dsn := srv.NewDatabase(t)
		damage := func(t testing.TB, id string) {
			if _, err := rawDB(t, dsn).Exec(`DELETE FROM lode_turns WHERE thread_id = $1 AND seq = (SELECT MAX(seq) FROM lode_turns WHERE thread_id = $1)`, id); err != nil {
				t.Fatal(err)
			}
		}
		return func(t testing.TB) ledger.Store { return open(t, dsn) }, damage
	})
}

func TestSQL(t *testing.T) {
	srv := pgtest.Shared(t)
	sqltest.Run(t, func(t testing.TB) sqltest.Backend {
		dsn := srv.NewDatabase(t)
		return sqltest.Backend{
			Open:    func(t testing.TB) *sqlstore.Store { return open(t, dsn) },
			Dial:    func(ctx context.Context) (*sqlstore.Store, error) { return postgres.Open(ctx, dsn) },
			Raw:     rawDB(t, dsn),
			Dialect: sqlstore.Postgres,
		}
	})
}

// The server stops mid-run: changes fail with the driver's error, nothing
// persisted is lost, and once it is back the same State carries on.
func TestServerGoesAway(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := srv.NewDatabase(t)
	ctx := context.Background()
	s := open(t, dsn, sqlstore.WithTimeout(5*time.Second))
	st, err := s.Create(ctx, ledger.WithID("run"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"one", "two"} {
		if err := st.Append(ledger.RoleUser, artifact.Text{Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			srv.Restart()
		}
	}()
	err = st.Append(ledger.RoleAssistant, artifact.Text{Content: "lost"})
	if err == nil || !strings.Contains(err.Error(), "append turn 2 to thread run") {
		t.Fatalf("append while the server is down: %v", err)
	}
	t.Logf("append while down: %v", err)
	if st.Len() != 2 {
		t.Fatalf("%d turns in memory", st.Len())
	}
	if _, err := s.Load(ctx, "run"); err == nil {
		t.Fatal("load succeeded with the server down")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	got, err := open(t, dsn).Load(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.EqualTurns(t, got.Turns(), st.Turns())
	if err := st.Append(ledger.RoleAssistant, artifact.Text{Content: "three"}); err != nil {
		t.Fatalf("append once the server is back: %v", err)
	}
}

// A database that hangs (here: a row lock held elsewhere) fails the change
// after the store's timeout instead of hanging the loop.
func TestHangingDatabaseTimesOut(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := srv.NewDatabase(t)
	ctx := context.Background()
	s := open(t, dsn, sqlstore.WithTimeout(300*time.Millisecond))
	st, err := s.Create(ctx, ledger.WithID("slow"))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := rawDB(t, dsn).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`SELECT * FROM lode_threads WHERE id = 'slow' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	err = st.Append(ledger.RoleUser, artifact.Text{Content: "x"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append against a locked row: %v", err)
	}
	tx.Rollback()
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "y"}); err != nil {
		t.Fatalf("append after the lock is gone: %v", err)
	}
	if st.Len() != 1 {
		t.Fatalf("%d turns", st.Len())
	}
}

func TestOpenBadDSN(t *testing.T) {
	_, err := postgres.Open(context.Background(), "postgres://lode@127.0.0.1:notaport/x")
	if err == nil || !strings.Contains(err.Error(), "postgres: ") {
		t.Fatalf("open: %v", err)
	}
}

func TestLeaseCrash(t *testing.T) {
	ledgertest.LeaseCrash(t, "TestLeaseCrash", func(t testing.TB) string { return pgtest.Shared(t).NewDatabase(t) },
		func(dsn string) (ledger.Store, error) { return postgres.Open(context.Background(), dsn) })
}

func TestForkCrash(t *testing.T) {
	ledgertest.ForkCrash(t, "TestForkCrash", func(t testing.TB) string { return pgtest.Shared(t).NewDatabase(t) },
		func(dsn string) (ledger.Store, error) { return postgres.Open(context.Background(), dsn) })
}
