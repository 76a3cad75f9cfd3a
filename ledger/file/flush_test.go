package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
)

// holdFlush makes s's next flush wait, once it has started, until want
// records have joined the flush after it; it returns a channel closed when
// that flush is waiting, and the sizes of the flushes started since.
func holdFlush(s *file.Store, want int) (<-chan struct{}, func() []int) {
	var mu sync.Mutex
	var sizes []int
	running, joined := make(chan struct{}), make(chan struct{})
	var once, first sync.Once
	file.WatchFlushes(s,
		func(n int) {
			if n == want {
				once.Do(func() { close(joined) })
			}
		},
		func(n int) {
			mu.Lock()
			sizes = append(sizes, n)
			mu.Unlock()
			first.Do(func() { close(running); <-joined })
		})
	return running, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), sizes...)
	}
}

// groupOf opens a store on a faulty disk and n threads on it.
func groupOf(t *testing.T, n int, opts ...file.Option) (*file.Store, *faultyDisk, []*ledger.StoredThread, string) {
	t.Helper()
	if !file.CanSyncAll {
		t.Skip("records share flushes only where the system flushes a whole file system (Linux)")
	}
	dir := t.TempDir()
	disk := &faultyDisk{}
	s, err := file.Open(dir, append([]file.Option{file.WithWriter(disk.wrap)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	threads := make([]*ledger.StoredThread, n)
	for i := range threads {
		if threads[i], err = s.Create(context.Background(), ledger.WithID(fmt.Sprint("t", i))); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { threads[i].Close() })
	}
	return s, disk, threads, dir
}

// A lone record flushes its own journal, as it always did. Records written
// while a flush runs share the next one, a flush of the whole file system,
// and each returns once it is done; every record is then in its journal.
func TestRecordsShareFlushes(t *testing.T) {
	const n = 6
	s, disk, threads, dir := groupOf(t, n)
	base := disk.count()
	if err := threads[0].Append(ledger.RoleUser, artifact.Text{Content: "alone"}); err != nil {
		t.Fatal(err)
	}
	if got := disk.count() - base; got != 1 {
		t.Fatalf("a lone record: %d fsyncs of its journal, want 1", got)
	}
	running, sizes := holdFlush(s, n-1)
	base = disk.count()
	lead := make(chan error, 1)
	go func() { lead <- threads[0].Append(ledger.RoleUser, artifact.Text{Content: "first"}) }()
	<-running
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() { errs[i] = threads[i].Append(ledger.RoleUser, artifact.Text{Content: "shared"}) })
	}
	wg.Wait()
	if err := <-lead; err != nil {
		t.Fatal(err)
	}
	for i, err := range errs[1:] {
		if err != nil {
			t.Errorf("t%d: %v", i+1, err)
		}
	}
	if got := sizes(); len(got) != 2 || got[0] != 1 || got[1] != n-1 {
		t.Fatalf("flushes of %v records, want [1 %d]", got, n-1)
	}
	if got := disk.count() - base; got != 1 {
		t.Fatalf("%d fsyncs of single journals, want 1 (the first record's): the rest shared one flush", got)
	}
	again, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for i := range n {
		st, err := again.Load(context.Background(), fmt.Sprint("t", i))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 2, false: 1}[i == 0]; st.Len() != want {
			t.Errorf("t%d: %d turns, want %d", i, st.Len(), want)
		}
		st.Close()
	}
}

// When a shared flush fails, every record it covers fails with its error
// and is taken back out of its journal, as when an fsync of one journal
// fails; the threads then go on.
func TestSharedFlushFails(t *testing.T) {
	const n = 4
	syncAll, heal := failingSyncAll()
	s, _, threads, dir := groupOf(t, n, syncAll)
	running, _ := holdFlush(s, n-1)
	lead := make(chan error, 1)
	go func() { lead <- threads[0].Append(ledger.RoleUser, artifact.Text{Content: "first"}) }()
	<-running
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() { errs[i] = threads[i].Append(ledger.RoleUser, artifact.Text{Content: "lost"}) })
	}
	wg.Wait()
	if err := <-lead; err != nil {
		t.Fatalf("t0, flushed alone: %v", err)
	}
	for i := 1; i < n; i++ {
		if !errors.Is(errs[i], syscall.EIO) {
			t.Errorf("t%d: %v, want the flush's EIO", i, errs[i])
		}
		if threads[i].Len() != 0 {
			t.Errorf("t%d holds %d turns after a failed append", i, threads[i].Len())
		}
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("t%d.journal", i)))
		if err != nil {
			t.Fatal(err)
		}
		if lines := countLines(data); lines != 1 {
			t.Errorf("t%d's journal has %d lines, want its header alone", i, lines)
		}
	}
	heal()
	file.WatchFlushes(s, nil, nil)
	for i := 1; i < n; i++ {
		if err := threads[i].Append(ledger.RoleUser, artifact.Text{Content: "again"}); err != nil {
			t.Errorf("t%d after the failure: %v", i, err)
		}
	}
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

// failingSyncAll is a flush of the whole file system that fails with EIO
// until heal is called.
func failingSyncAll() (_ file.Option, heal func()) {
	var mu sync.Mutex
	fail := true
	return file.WithSyncAll(func() error {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				return &os.PathError{Op: "syncfs", Path: "threads", Err: syscall.EIO}
			}
			return nil
		}), func() {
			mu.Lock()
			fail = false
			mu.Unlock()
		}
}

// createDuringFlush appends to lead, whose flush holdFlush holds (running
// is closed once it does), and meanwhile creates n threads new0…, each
// with opts, at once; it returns each Create's error once the lead's
// record, flushed alone, is in.
func createDuringFlush(t *testing.T, s *file.Store, lead *ledger.StoredThread, running <-chan struct{}, n int, opts ...ledger.ThreadOption) []error {
	t.Helper()
	first := make(chan error, 1)
	go func() { first <- lead.Append(ledger.RoleUser, artifact.Text{Content: "first"}) }()
	<-running
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			st, err := s.Create(context.Background(), append([]ledger.ThreadOption{ledger.WithID(fmt.Sprint("new", i))}, opts...)...)
			if err == nil {
				st.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatalf("the lead record, flushed alone: %v", err)
	}
	return errs
}

// Threads made while a flush runs share flushes too, for their journal
// and for the directory that names it: none fsyncs its own file, and each
// is there, whole, for a store opened afterwards.
func TestCreatesShareFlushes(t *testing.T) {
	const n = 5
	s, disk, threads, dir := groupOf(t, 1)
	running, sizes := holdFlush(s, n)
	base := disk.count()
	errs := createDuringFlush(t, s, threads[0], running, n,
		ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "hello"}}}))
	for i, err := range errs {
		if err != nil {
			t.Errorf("new%d: %v", i, err)
		}
	}
	if got := sizes(); len(got) < 2 || got[0] != 1 || got[1] != n {
		t.Fatalf("flushes of %v records, want 1 (the lead's), then %d (the new journals'), then the directory's", got, n)
	}
	if got := disk.count() - base; got != 1 {
		t.Fatalf("%d fsyncs of single journals, want 1 (the lead's)", got)
	}
	again, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for i := range n {
		st, err := again.Load(context.Background(), fmt.Sprint("new", i))
		if err != nil {
			t.Fatal(err)
		}
		if st.Len() != 1 {
			t.Errorf("new%d: %d turns, want 1", i, st.Len())
		}
		st.Close()
	}
}

// A thread whose journal's shared flush fails is not made: Create returns
// the flush's error, and neither the journal nor its temporary file is
// left behind.
func TestCreateFlushFails(t *testing.T) {
	const n = 3
	syncAll, heal := failingSyncAll()
	s, _, threads, dir := groupOf(t, 1, syncAll)
	running, _ := holdFlush(s, n)
	errs := createDuringFlush(t, s, threads[0], running, n)
	for i, err := range errs {
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("new%d: %v, want the flush's EIO", i, err)
		}
		if _, err := s.Load(context.Background(), fmt.Sprint("new", i)); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("new%d after a failed create: %v, want ErrNotFound", i, err)
		}
	}
	left, err := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if err != nil || len(left) != 0 {
		t.Fatalf("temporary files left: %v (%v)", left, err)
	}
	heal()
	file.WatchFlushes(s, nil, nil)
	st, err := s.Create(context.Background(), ledger.WithID("new0"))
	if err != nil {
		t.Fatalf("new0 after the failure: %v", err)
	}
	st.Close()
}
