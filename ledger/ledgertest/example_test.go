package ledgertest_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// memory is storage in memory: the threads that every memStore opened
// over it shares, as processes share a database.
type memory struct {
	mu      sync.Mutex
	threads map[string]*memThread
}

// memThread is one stored thread. Turns are kept encoded, as a database
// would keep them, so that what cannot be encoded is refused and nothing
// the caller still holds is shared. A deleted thread's memThread is
// dropped, so a StoredThread still bound to it finds it gone even once the
// ID is taken again.
type memThread struct {
	id               string
	version          int64
	turns            [][]byte
	meta             map[string]string
	created, updated time.Time
	deleted          bool
	damaged          bool // set by the damage tests
}

func newMemory() *memory { return &memory{threads: make(map[string]*memThread)} }

// memStore is one instance of a ledger.Store over a memory.
type memStore struct {
	m      *memory
	mu     sync.Mutex
	closed bool
}

func (m *memory) open() *memStore { return &memStore{m: m} }

func (s *memStore) check(ctx context.Context, op string) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("memstore: %s: %w", op, ledger.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: %s: %w", op, err)
	}
	return nil
}

func (s *memStore) Create(ctx context.Context, opts ...ledger.ThreadOption) (*ledger.StoredThread, error) {
	if err := s.check(ctx, "create"); err != nil {
		return nil, err
	}
	seed := ledger.NewThread(opts...)
	id := seed.ID()
	if err := ledger.CheckID(id); err != nil {
		return nil, fmt.Errorf("memstore: create: %w", err)
	}
	now := time.Now()
	th := &memThread{id: id, meta: seed.AllMetadata(), created: now, updated: now}
	if th.meta == nil {
		th.meta = map[string]string{}
	}
	for i, tu := range seed.Turns() {
		b, err := json.Marshal(tu)
		if err != nil {
			return nil, fmt.Errorf("memstore: create %s: turn %d: %w", id, i, err)
		}
		th.turns = append(th.turns, b)
	}
	th.version = int64(len(th.turns))
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if _, taken := s.m.threads[id]; taken {
		return nil, fmt.Errorf("memstore: create: thread %q already exists: %w", id, ledger.ErrConflict)
	}
	s.m.threads[id] = th
	snap, err := th.snapshot()
	if err != nil {
		return nil, err
	}
	return ledger.NewStoredThread(id, snap, &memJournal{s: s, th: th}, time.Now), nil
}

func (s *memStore) Load(ctx context.Context, id string) (*ledger.StoredThread, error) {
	if err := s.check(ctx, "load"); err != nil {
		return nil, err
	}
	if err := ledger.CheckID(id); err != nil {
		return nil, fmt.Errorf("memstore: load: %w", err)
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	th, ok := s.m.threads[id]
	if !ok {
		return nil, fmt.Errorf("memstore: load %s: %w", id, ledger.ErrNotFound)
	}
	snap, err := th.snapshot()
	if err != nil {
		return nil, err
	}
	return ledger.NewStoredThread(id, snap, &memJournal{s: s, th: th}, time.Now), nil
}

func (s *memStore) List(ctx context.Context) iter.Seq2[ledger.ThreadInfo, error] {
	return func(yield func(ledger.ThreadInfo, error) bool) {
		if err := s.check(ctx, "list"); err != nil {
			yield(ledger.ThreadInfo{}, err)
			return
		}
		// Copy under the lock, yield without it: the loop body may use the
		// store.
		s.m.mu.Lock()
		var infos []ledger.ThreadInfo
		var errs []error
		for _, th := range s.m.threads {
			info := ledger.ThreadInfo{ID: th.id, Turns: len(th.turns), Metadata: maps.Clone(th.meta), Created: th.created, Updated: th.updated}
			var err error
			if th.damaged {
				info, err = ledger.ThreadInfo{ID: th.id}, fmt.Errorf("memstore: thread %s: %w", th.id, ledger.ErrCorrupt)
			}
			infos, errs = append(infos, info), append(errs, err)
		}
		s.m.mu.Unlock()
		order := make([]int, len(infos))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(infos[a].ID, infos[b].ID) })
		for _, i := range order {
			if !yield(infos[i], errs[i]) {
				return
			}
		}
	}
}

func (s *memStore) Delete(ctx context.Context, id string) error {
	if err := s.check(ctx, "delete"); err != nil {
		return err
	}
	if err := ledger.CheckID(id); err != nil {
		return fmt.Errorf("memstore: delete: %w", err)
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	th, ok := s.m.threads[id]
	if !ok {
		return fmt.Errorf("memstore: delete %s: %w", id, ledger.ErrNotFound)
	}
	th.deleted = true
	delete(s.m.threads, id)
	return nil
}

func (s *memStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// snapshot decodes the thread; the caller holds the memory's lock.
func (th *memThread) snapshot() (ledger.Snapshot, error) {
	if th.damaged {
		return ledger.Snapshot{}, fmt.Errorf("memstore: thread %s: %w", th.id, ledger.ErrCorrupt)
	}
	snap := ledger.Snapshot{Version: th.version, Metadata: maps.Clone(th.meta), Turns: make([]ledger.Turn, len(th.turns))}
	for i, b := range th.turns {
		if err := json.Unmarshal(b, &snap.Turns[i]); err != nil {
			return ledger.Snapshot{}, fmt.Errorf("memstore: thread %s: turn %d: %v: %w", th.id, i, err, ledger.ErrCorrupt)
		}
	}
	return snap, nil
}

// memJournal is the durable side of one StoredThread.
type memJournal struct {
	s      *memStore
	th     *memThread
	mu     sync.Mutex
	closed bool
}

func (j *memJournal) check(ctx context.Context) error {
	j.mu.Lock()
	closed := j.closed
	j.mu.Unlock()
	if closed {
		return fmt.Errorf("memstore: thread %s: %w", j.th.id, ledger.ErrClosed)
	}
	return j.s.check(ctx, "thread "+j.th.id)
}

func (j *memJournal) Commit(ctx context.Context, r ledger.Record) error {
	if err := j.check(ctx); err != nil {
		return err
	}
	var line []byte
	if r.Turn != nil {
		b, err := json.Marshal(r.Turn)
		if err != nil {
			return fmt.Errorf("memstore: thread %s: %w", j.th.id, err)
		}
		line = b
	}
	j.s.m.mu.Lock()
	defer j.s.m.mu.Unlock()
	th := j.th
	switch {
	case th.deleted:
		return fmt.Errorf("memstore: thread %s: %w", th.id, ledger.ErrNotFound)
	case th.version != r.Version-1:
		return fmt.Errorf("memstore: thread %s is at version %d, not %d: %w", th.id, th.version, r.Version-1, ledger.ErrConflict)
	case r.Turn != nil:
		th.turns = append(th.turns, line)
	default:
		th.meta[r.Key] = r.Value
	}
	th.version = r.Version
	th.updated = time.Now()
	return nil
}

func (j *memJournal) Read(ctx context.Context) (ledger.Snapshot, error) {
	if err := j.check(ctx); err != nil {
		return ledger.Snapshot{}, err
	}
	j.s.m.mu.Lock()
	defer j.s.m.mu.Unlock()
	if j.th.deleted {
		return ledger.Snapshot{}, fmt.Errorf("memstore: thread %s: %w", j.th.id, ledger.ErrNotFound)
	}
	return j.th.snapshot()
}

func (j *memJournal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	return nil
}

// A store written in a test file, here one that keeps threads in memory,
// runs the whole contract with one call in its test (see memstore_test.go
// beside this file):
//
//	func TestMemStore(t *testing.T) {
//		ledgertest.Run(t, func(t testing.TB) ledgertest.Opener {
//			m := newMemory() // fresh storage for each subtest
//			return func(t testing.TB) ledger.Store { return m.open() }
//		})
//	}
//
// Every Store instance the Opener returns is independent, as one in
// another process would be; what they share is the storage. This example
// shows two instances over one memory.
func Example() {
	ctx := context.Background()
	m := newMemory()
	st, err := m.open().Create(ctx, ledger.WithID("hello"))
	if err != nil {
		panic(err)
	}
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "hi"}); err != nil {
		panic(err)
	}
	other, err := m.open().Load(ctx, "hello")
	if err != nil {
		panic(err)
	}
	fmt.Println(other.ID(), other.Len(), other.Turns()[0].Artifacts[0].(artifact.Text).Content)
	// Output: hello 1 hi
}
