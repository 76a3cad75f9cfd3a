package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/sqlstore"
	"github.com/lodeworks/lode/ledger/sqlstore/sqlite"
)

// open opens a SQLite store and a raw handle on its file.
func open(t *testing.T) (*sqlstore.Store, *sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	raw, err := sql.Open("sqlite", sqlite.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return s, raw, path
}

// hold makes s's next batch wait, once it is formed, until want records
// have queued behind it. It returns a channel closed once that batch is
// waiting, and the sizes of the batches run since.
func hold(s *sqlstore.Store, want int) (<-chan struct{}, func() []int) {
	var mu sync.Mutex
	var sizes []int
	leading, queued := make(chan struct{}), make(chan struct{})
	var once, first sync.Once
	sqlstore.WatchBatches(s,
		func(n int) {
			if n == want {
				once.Do(func() { close(queued) })
			}
		},
		func(n int) {
			mu.Lock()
			sizes = append(sizes, n)
			mu.Unlock()
			first.Do(func() { close(leading); <-queued })
		})
	return leading, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(sizes)
	}
}

func text(s string) artifact.Artifact { return artifact.Text{Content: s} }

// Records that threads commit while a batch runs form the next batch,
// one transaction: a record the thread refuses (a stale writer) fails
// alone inside it, a record the database refuses (a turn row already
// there) rolls the batch back and each record is committed alone, so
// that every writer gets its own exact outcome and nothing else is lost.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	s, raw, path := open(t)
	threads := map[string]*ledger.StoredThread{}
	for _, id := range []string{"t0", "t1", "t2", "t3", "t4", "t5"} {
		st, err := s.Create(ctx, ledger.WithID(id))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		threads[id] = st
	}
	stale, err := s.Load(ctx, "t2")
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	if err := threads["t2"].Append(ledger.RoleUser, text("t2 first")); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO lode_turns (thread_id, seq, role, turn) VALUES ('t3', 0, 'user', '{}')`); err != nil {
		t.Fatal(err)
	}
	leading, sizes := hold(s, 5)
	lead := make(chan error, 1)
	go func() { lead <- threads["t0"].Append(ledger.RoleUser, text("t0 says")) }()
	<-leading
	// The leader waits, its batch formed, until the five below queue.
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i, do := range []func() error{
		func() error { return threads["t1"].Append(ledger.RoleUser, text("t1 says")) },
		func() error { return stale.Append(ledger.RoleUser, text("stale t2")) },
		func() error { return threads["t3"].Append(ledger.RoleUser, text("t3 says")) },
		func() error { return threads["t4"].Append(ledger.RoleUser, text("t4 says")) },
		func() error {
			_, err := threads["t5"].AcquireLease(ctx, "w", time.Now(), time.Minute)
			return err
		},
	} {
		wg.Go(func() { errs[i] = do() })
	}
	wg.Wait()
	if err := <-lead; err != nil {
		t.Fatalf("t0: %v", err)
	}
	if got := sizes(); !slices.Equal(got, []int{1, 5}) {
		t.Fatalf("batches of %v, want [1 5]", got)
	}
	for i, want := range []string{"", "conflict", "UNIQUE constraint failed", "", ""} {
		err := errs[i]
		switch {
		case want == "" && err != nil:
			t.Errorf("record %d: %v", i, err)
		case want == "conflict" && !errors.Is(err, ledger.ErrConflict):
			t.Errorf("record %d: %v, want ErrConflict", i, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("record %d: %v, want %q", i, err, want)
		}
	}

	again, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for id, want := range map[string]string{"t0": "t0 says", "t1": "t1 says", "t2": "t2 first", "t4": "t4 says"} {
		st, err := again.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Turns(); len(got) != 1 || textOf(got[0]) != want || st.Version() != 1 {
			t.Errorf("%s: %d turns (%v), version %d, want just %q", id, len(got), got, st.Version(), want)
		}
		st.Close()
	}
	var version int64
	if err := raw.QueryRow(`SELECT version FROM lode_threads WHERE id = 't3'`).Scan(&version); err != nil || version != 0 {
		t.Errorf("t3 at version %d (%v), want 0: its failed record must leave nothing", version, err)
	}
	st, err := again.Load(ctx, "t5")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if l, _ := st.Lease(); l.Owner != "w" {
		t.Errorf("t5 lease %+v, want w's", l)
	}
}

// A record still queued when its writer gives up is taken out of the
// queue and never written; the thread's state is as before, so the same
// writer can try again.
func TestQueuedRecordWithdrawn(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := s.Create(ctx, ledger.WithID("a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := s.Create(ctx, ledger.WithID("b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// a's batch waits until b's record has queued and b's writer has
	// given up.
	leading, queued, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	sqlstore.WatchBatches(s, func(int) { close(queued) }, func(int) { close(leading); <-release })
	lead := make(chan error, 1)
	go func() { lead <- a.Append(ledger.RoleUser, text("a says")) }()
	<-leading
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := b.AcquireLease(cctx, "w", time.Now(), time.Minute)
		done <- err
	}()
	<-queued
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("b: %v, want context.Canceled", err)
	}
	close(release)
	if err := <-lead; err != nil {
		t.Fatalf("a: %v", err)
	}
	sqlstore.WatchBatches(s, nil, nil)
	reread, err := s.Load(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer reread.Close()
	if l, _ := reread.Lease(); l.Owner != "" || reread.Version() != 0 {
		t.Fatalf("b stored lease %+v at version %d, want none at 0", l, reread.Version())
	}
	if _, err := b.AcquireLease(ctx, "w", time.Now(), time.Minute); err != nil {
		t.Fatalf("b again: %v", err)
	}
}

func textOf(t ledger.Turn) string {
	var b strings.Builder
	for _, a := range t.Artifacts {
		if x, ok := a.(artifact.Text); ok {
			b.WriteString(x.Content)
		}
	}
	return b.String()
}

// A record taken into a batch whose writer gives up before the batch runs
// is not written: its writer gets the context's error, and the batch's
// other records commit.
func TestTakenRecordOfAWriterWhoGaveUp(t *testing.T) {
	ctx := context.Background()
	s, _, _ := open(t)
	var threads []*ledger.StoredThread
	for _, id := range []string{"a", "b", "c"} {
		st, err := s.Create(ctx, ledger.WithID(id))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		threads = append(threads, st)
	}
	// a's batch waits until b and c have queued; b then leads a batch of
	// b and c, which waits until c's writer has given up.
	leading, queued, formed, release := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	var batches int
	sqlstore.WatchBatches(s,
		func(n int) {
			if n == 2 {
				close(queued)
			}
		},
		func(n int) {
			batches++
			switch batches {
			case 1:
				close(leading)
				<-queued
			case 2:
				if n != 2 {
					t.Errorf("second batch of %d records, want 2", n)
				}
				close(formed)
				<-release
			}
		})
	errs := make(chan error, 2)
	go func() { errs <- threads[0].Append(ledger.RoleUser, text("a says")) }()
	<-leading
	go func() { errs <- threads[1].Append(ledger.RoleUser, text("b says")) }()
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := threads[2].AcquireLease(cctx, "w", time.Now(), time.Minute)
		gaveUp <- err
	}()
	<-formed
	cancel()
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("c: %v, want context.Canceled", err)
	}
	sqlstore.WatchBatches(s, nil, nil)
	for _, id := range []string{"b", "c"} {
		st, err := s.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := st.Lease()
		if id == "b" && st.Len() != 1 || id == "c" && (l.Owner != "" || st.Version() != 0) {
			t.Errorf("%s: %d turns, lease %+v, version %d", id, st.Len(), l, st.Version())
		}
		st.Close()
	}
}
