package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/x/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestParse(t *testing.T) {
	for _, c := range []struct {
		spec string
		want store.Spec
	}{
		{".lode/threads", store.Spec{Kind: store.File, Path: ".lode/threads"}},
		{"/var/lib/lode", store.Spec{Kind: store.File, Path: "/var/lib/lode"}},
		{" threads ", store.Spec{Kind: store.File, Path: "threads"}},
		{"C:\\lode\\threads", store.Spec{Kind: store.File, Path: "C:\\lode\\threads"}},
		{"sqlite:/var/lib/lode/threads.db", store.Spec{Kind: store.SQLite, Path: "/var/lib/lode/threads.db"}},
		{"sqlite:threads.db", store.Spec{Kind: store.SQLite, Path: "threads.db"}},
		{"SQLite:threads.db", store.Spec{Kind: store.SQLite, Path: "threads.db"}},
		{"postgres://lode@db.internal/lode", store.Spec{Kind: store.Postgres, URL: "postgres://lode@db.internal/lode"}},
		{"postgresql://lode@127.0.0.1:5432/lode?sslmode=disable", store.Spec{Kind: store.Postgres, URL: "postgresql://lode@127.0.0.1:5432/lode?sslmode=disable"}},
		{"postgres:///lode?host=/run/postgresql", store.Spec{Kind: store.Postgres, URL: "postgres:///lode?host=/run/postgresql"}},
	} {
		got, err := store.Parse(c.spec)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.spec, got, err, c.want)
			continue
		}
		if s := got.String(); s != strings.TrimSpace(c.spec) && !strings.EqualFold(s, strings.TrimSpace(c.spec)) {
			t.Errorf("Parse(%q).String() = %q", c.spec, s)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	const pw = "drop it from the URL and set PGPASSWORD, or put it in ~/.pgpass (or the file PGPASSFILE names)"
	const kept = ": lode does not take the password from the store setting, which is printed, kept in lode.yaml and shell history, and visible to other users in the process list; " + pw
	for _, c := range []struct {
		spec string
		is   error
		want string
	}{
		{"", store.ErrSpec, "store: invalid store spec: the spec is empty: want a folder, sqlite:PATH or postgres://USER@HOST/DB"},
		{"  ", store.ErrSpec, "store: invalid store spec: the spec is empty: want a folder, sqlite:PATH or postgres://USER@HOST/DB"},
		{"sqlite:", store.ErrSpec, `store: invalid store spec "sqlite:": no file after sqlite:; write sqlite:PATH, e.g. sqlite:.lode/threads.db`},
		{"sqlite::memory:", store.ErrSpec, `store: invalid store spec "sqlite::memory:": an in-memory SQLite database keeps nothing; leave the store out to keep threads in memory`},
		{"sqlite://tmp/x.db", store.ErrSpec, `store: invalid store spec "sqlite://tmp/x.db": write sqlite:PATH with the path as is (sqlite:/var/lib/lode/threads.db), not a URL`},
		{"sqlite:x.db?mode=ro", store.ErrSpec, `store: invalid store spec "sqlite:x.db?mode=ro": a SQLite path takes no '?' or '#'; lode sets the database's options itself`},
		{"mysql://lode@db/lode", store.ErrSpec, `store: invalid store spec "mysql://lode@db/lode": unknown kind of store "mysql": want a folder, sqlite:PATH or postgres://USER@HOST/DB`},
		{"postgres:lode", store.ErrSpec, `store: invalid store spec "postgres:lode": write postgres://USER@HOST:PORT/DB`},
		{"postgres://", store.ErrSpec, `store: invalid store spec "postgres://": write postgres://USER@HOST:PORT/DB`},
		{"postgres://lode:s3cret@db/lode", store.ErrPassword, `store: a password in the store spec "postgres://lode:xxxxx@db/lode"` + kept},
		{"postgresql://lode:@db/lode", store.ErrPassword, `store: a password in the store spec "postgresql://lode:xxxxx@db/lode"` + kept},
		{"postgres://lode@db/lode?password=s3cret", store.ErrPassword, `store: a password in the store spec "postgres://lode@db/lode?password=xxxxx"` + kept},
		{"postgres://lode@db/lode?sslmode=require&sslpassword=s3cret", store.ErrPassword, `store: a password in the store spec "postgres://lode@db/lode?sslmode=require&sslpassword=xxxxx"` + kept},
		{"postgres://lode:s3cret@db:port/lode", store.ErrSpec, `store: invalid store spec "postgres://…@db:port/lode": not a URL (invalid port ":port" after host): write postgres://USER@HOST:PORT/DB`},
	} {
		_, err := store.Parse(c.spec)
		if err == nil || !errors.Is(err, c.is) || err.Error() != c.want {
			t.Errorf("Parse(%q) = %v\n want %s", c.spec, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q): the error shows the password: %v", c.spec, err)
		}
		if _, oerr := store.Open(context.Background(), c.spec); oerr == nil || oerr.Error() != c.want {
			t.Errorf("Open(%q) = %v, want Parse's error", c.spec, oerr)
		}
	}
}

// checkStore uses s as lode does: a thread, its lease, a counter.
func checkStore(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := s.Create(ctx, ledger.WithID("t1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	got, err := s.Load(ctx, "t1")
	if err != nil || got.Len() != 1 {
		t.Fatalf("Load: %v", err)
	}
	got.Close()
	if total, ok, err := s.AddCounter(ctx, "usd/day", 5, 10); err != nil || !ok || total != 5 {
		t.Fatalf("AddCounter: %d %v %v", total, ok, err)
	}
	if total, ok, err := s.AddCounter(ctx, "usd/day", 6, 10); err != nil || ok || total != 5 {
		t.Fatalf("AddCounter past the limit: %d %v %v", total, ok, err)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	t.Run("folder", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "threads")
		s, err := store.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		checkStore(t, s)
		if _, err := os.Stat(filepath.Join(dir)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "new", "threads.db")
		s, err := store.Open(ctx, "sqlite:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		checkStore(t, s)
		if _, err := os.Stat(path); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.Shared(t).NewDatabase(t)
		s, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		checkStore(t, s)
		// A second handle, as a second replica has, sees the same.
		s2, err := store.Open(ctx, strings.Replace(dsn, "postgres://", "postgresql://", 1))
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if total, _, err := s2.AddCounter(ctx, "usd/day", 0, ledger.NoLimit); err != nil || total != 5 {
			t.Fatalf("the second handle counts %d, %v", total, err)
		}
	})
	t.Run("unreachable postgres", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 20e9)
		defer cancel()
		_, err := store.Open(cctx, "postgres://lode@127.0.0.1:1/lode?connect_timeout=5")
		if err == nil || !strings.HasPrefix(err.Error(), "store: postgres://lode@127.0.0.1:1/lode?connect_timeout=5: ") ||
			!strings.HasSuffix(err.Error(), ": check the host, user and database in the URL, and that PGPASSWORD or ~/.pgpass gives the password") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("not a sqlite file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "x.db")
		os.WriteFile(path, []byte("not a database, not at all, no; it is long enough to be read as a header of a file"), 0o600)
		_, err := store.Open(ctx, "sqlite:"+path)
		if err == nil || !strings.HasPrefix(err.Error(), "store: sqlite:"+path+": ") || !strings.HasSuffix(err.Error(), ": check that the file is a SQLite database lode can write") {
			t.Fatalf("err = %v", err)
		}
	})
}
