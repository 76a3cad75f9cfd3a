package storetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lodeworks/lode/internal/pgtest"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/ledger/sqlstore/postgres"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// store is one of lode's stores: how to make fresh storage and open it.
type store struct {
	name  string
	where func(t testing.TB) string
	open  func(where string) (ledger.Store, error)
}

var stores = []store{
	{"file", func(t testing.TB) string { return t.TempDir() },
		func(dir string) (ledger.Store, error) { return file.Open(dir) }},
	{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "ledger.db") },
		func(path string) (ledger.Store, error) { return sqlite.Open(context.Background(), path) }},
	{"postgres", func(t testing.TB) string { return pgtest.Shared(t).NewDatabase(t) },
		func(dsn string) (ledger.Store, error) { return postgres.Open(context.Background(), dsn) }},
}

func (s store) opener(t testing.TB) Opener {
	where := s.where(t)
	return func(t testing.TB) ledger.Store {
		st, err := s.open(where)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
}

func TestLoop(t *testing.T) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { Run(t, s.opener) })
	}
}

func TestApproval(t *testing.T) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { RunApproval(t, s.opener) })
	}
}

// The crash tests re-run the test binary with -test.run naming one test,
// so each store has a test function of its own.

func TestApprovalCrashFile(t *testing.T)   { approvalCrash(t, "TestApprovalCrashFile", stores[0]) }
func TestApprovalCrashSQLite(t *testing.T) { approvalCrash(t, "TestApprovalCrashSQLite", stores[1]) }
func TestApprovalCrashPostgres(t *testing.T) {
	approvalCrash(t, "TestApprovalCrashPostgres", stores[2])
}

func approvalCrash(t *testing.T, name string, s store) {
	ApprovalCrash(t, name, s.where, s.open)
}

func TestLeaseCrashFile(t *testing.T)     { leaseCrash(t, "TestLeaseCrashFile", stores[0]) }
func TestLeaseCrashSQLite(t *testing.T)   { leaseCrash(t, "TestLeaseCrashSQLite", stores[1]) }
func TestLeaseCrashPostgres(t *testing.T) { leaseCrash(t, "TestLeaseCrashPostgres", stores[2]) }

func leaseCrash(t *testing.T, name string, s store) {
	LeaseCrash(t, name, s.where, s.open)
}
