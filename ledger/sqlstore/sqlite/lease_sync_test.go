package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/sqlstore"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
)

// TestLeaseRecordsLeaveWritesSynced: lease records commit without
// waiting for the disk, and every connection is back at synchronous=FULL
// afterwards, whether the record was committed or refused, so the turns
// that follow wait for the disk as before.
func TestLeaseRecordsLeaveWritesSynced(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s0, err := sqlite.Open(ctx, path) // switches the file to WAL
	if err != nil {
		t.Fatal(err)
	}
	s0.Close()
	raw, err := sql.Open("sqlite", sqlite.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1) // the store's writes and this test's reads share it
	s, err := sqlstore.Open(ctx, raw, sqlstore.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Create(ctx, ledger.WithID("t1"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stale, err := s.Load(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	now := time.Now()
	steps := []struct {
		name string
		do   func() error
		want error
	}{
		{"acquire", func() error { _, err := st.AcquireLease(ctx, "a", now, time.Minute); return err }, nil},
		{"append", func() error { return st.Append(ledger.RoleUser, artifact.Text{Content: "hi"}) }, nil},
		{"renew", func() error { return st.RenewLease(ctx, "a", now, time.Minute) }, nil},
		{"a stale acquire, refused by the compare-and-swap", func() error { _, err := stale.AcquireLease(ctx, "b", now, time.Minute); return err }, ledger.ErrConflict},
		{"release", func() error { return st.ReleaseLease(ctx, "a") }, nil},
	}
	for _, step := range steps {
		err := step.do()
		if (step.want == nil && err != nil) || (step.want != nil && !errors.Is(err, step.want)) {
			t.Fatalf("%s: %v, want %v", step.name, err, step.want)
		}
		var mode int
		if err := raw.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != 2 { // FULL
			t.Fatalf("after %s: synchronous=%d, want 2 (FULL)", step.name, mode)
		}
	}
	again, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got, err := again.Load(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if l, _ := got.Lease(); l.Owner != "" || got.Len() != 1 || got.Version() != st.Version() {
		t.Fatalf("reopened: lease %+v, %d turns, version %d, want %d", l, got.Len(), got.Version(), st.Version())
	}
}
