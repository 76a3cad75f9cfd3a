package ledger

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lodeworks/lode/artifact"
)

// Errors a Store and a StoredThread report, wrapped with context; test for
// them with errors.Is.
var (
	// ErrNotFound: the thread does not exist (or was deleted).
	ErrNotFound = errors.New("ledger: thread not found")
	// ErrClosed: the store or the thread was closed.
	ErrClosed = errors.New("ledger: closed")
	// ErrConflict: another writer changed the thread since this State last
	// saw it, or a thread with the ID being created already exists. Reload
	// the State and decide again.
	ErrConflict = errors.New("ledger: conflict")
	// ErrCorrupt: stored data cannot be read back as it was written.
	ErrCorrupt = errors.New("ledger: corrupt")
	// ErrInvalidID: a thread ID a store cannot hold.
	ErrInvalidID = errors.New("ledger: invalid thread id")
)

// MaxIDLen is the longest thread ID a Store accepts.
const MaxIDLen = 128

// CheckID reports whether id can name a stored thread: 1 to MaxIDLen bytes
// of ASCII letters, digits, '_', '-' and '.', not starting with '.'. Every
// store applies this rule, so an ID valid in one is valid in all, and it is
// safe as a file name.
func CheckID(id string) error {
	if id == "" || len(id) > MaxIDLen || id[0] == '.' {
		return fmt.Errorf("%w %q: want 1 to %d letters, digits, '_', '-' or '.', not starting with '.'", ErrInvalidID, id, MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("%w %q: byte %d (%q) is not a letter, digit, '_', '-' or '.'", ErrInvalidID, id, i, c)
		}
	}
	return nil
}

// Store keeps threads durably. A thread it hands out is a *StoredThread whose
// Append and SetMetadata persist the change before they return, so a loop
// run on it persists each turn the moment the turn completes.
type Store interface {
	// Create makes a new thread. WithID, WithMetadata and WithTurns set its
	// ID (random by default), metadata and initial history; an ID already
	// taken fails with ErrConflict.
	Create(ctx context.Context, opts ...ThreadOption) (*StoredThread, error)
	// Load opens an existing thread; a missing one fails with ErrNotFound.
	Load(ctx context.Context, id string) (*StoredThread, error)
	// List yields every thread, ordered by ID. A thread that cannot be read
	// is yielded with its ID and an error, and listing goes on; damage that
	// would make Load fail with ErrCorrupt is such an error, never hidden
	// behind a healthy-looking entry.
	List(ctx context.Context) iter.Seq2[ThreadInfo, error]
	// Delete removes a thread; a missing one fails with ErrNotFound.
	Delete(ctx context.Context, id string) error
	// Close releases the store. Afterwards every method, and every change
	// to a thread it handed out, fails with ErrClosed.
	Close() error
}

// ThreadInfo describes a stored thread without its history.
type ThreadInfo struct {
	ID       string
	Turns    int
	Metadata map[string]string
	Created  time.Time
	Updated  time.Time
}

// Journal is what a Store implements for one thread: the durable side of
// a StoredThread.
type Journal interface {
	// Commit persists one change. It must fail with ErrConflict, changing
	// nothing, unless the stored thread is at version r.Version-1.
	Commit(ctx context.Context, r Record) error
	// Read returns the thread as stored now.
	Read(ctx context.Context) (Snapshot, error)
	// Close releases what the journal holds; later calls fail with ErrClosed.
	Close() error
}

// Record is one change to a stored thread: a turn, or a metadata value.
type Record struct {
	// Version is the thread's version once the change is applied. Every
	// change increments it by one, so it also orders the changes.
	Version int64
	// Turn, when set, is appended as the thread's Index-th turn (from 0).
	Turn  *Turn
	Index int
	// Key and Value, when Turn is nil, set one metadata entry.
	Key, Value string
}

// Snapshot is a stored thread as read from its store.
type Snapshot struct {
	Version  int64
	Turns    []Turn
	Metadata map[string]string
}

// bare is one of this package's errors wrapped into a message that names
// the package already: it reads without its "ledger: " and still matches
// with errors.Is.
type bare struct{ err error }

func (b bare) Error() string { return strings.TrimPrefix(b.err.Error(), "ledger: ") }
func (b bare) Unwrap() error { return b.err }

// StoredThread is a State backed by a Journal. Reads are served from memory;
// each change is committed to the journal first and becomes visible only
// once it is durable, so a failed change leaves the State as it was.
//
// Another process may change the same thread: a change made on a stale
// StoredThread fails with ErrConflict, and Reload brings it up to date.
type StoredThread struct {
	id  string
	now func() time.Time
	j   Journal

	wmu    sync.Mutex // serialises changes: commit, then publish
	closed bool       // under wmu

	mu      sync.RWMutex
	version int64
	turns   []Turn
	meta    map[string]string
	open    openCalls
}

// NewStoredThread returns the thread id as read into snap, persisting its
// changes through j. now stamps appended turns; nil leaves them unstamped.
// Stores call it; applications get StoredThreads from a Store.
func NewStoredThread(id string, snap Snapshot, j Journal, now func() time.Time) *StoredThread {
	return &StoredThread{
		id:      id,
		now:     now,
		j:       j,
		version: snap.Version,
		turns:   slices.Clip(snap.Turns),
		meta:    snap.Metadata,
		open:    trackAll(snap.Turns),
	}
}

// ID returns the thread's identifier.
func (t *StoredThread) ID() string { return t.id }

// Turns returns the history; see State.
func (t *StoredThread) Turns() []Turn {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.turns[:len(t.turns):len(t.turns)]
}

// Len returns the number of turns.
func (t *StoredThread) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.turns)
}

// Version returns how many changes the stored thread had when this State
// last saw it.
func (t *StoredThread) Version() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.version
}

// Append persists a turn and then adds it to the history. On error nothing
// is added: the role is invalid, an artifact cannot be encoded, the store
// failed, or the thread is closed (ErrClosed), gone (ErrNotFound) or was
// changed elsewhere (ErrConflict).
func (t *StoredThread) Append(role Role, artifacts ...artifact.Artifact) error {
	return t.appendAt(-1, role, artifacts)
}

// AppendAt appends like Append, but only if this State is still at
// version (as Version reported it): a caller that decided something on
// what it read claims the decision with it, and a change made since, in
// this process or another, fails with ErrConflict, adding nothing.
func (t *StoredThread) AppendAt(version int64, role Role, artifacts ...artifact.Artifact) error {
	if version < 0 {
		return fmt.Errorf("ledger: append to thread %s at version %d: %w", t.id, version, bare{ErrConflict})
	}
	return t.appendAt(version, role, artifacts)
}

// appendAt appends at any version when version is negative.
func (t *StoredThread) appendAt(version int64, role Role, artifacts []artifact.Artifact) error {
	if !role.Valid() {
		return fmt.Errorf("ledger: append to thread %s: invalid role %q", t.id, role)
	}
	arts, err := ownArtifacts(artifacts)
	if err != nil {
		return fmt.Errorf("ledger: append to thread %s: %w", t.id, err)
	}
	turn := Turn{Role: role, Artifacts: arts}
	if t.now != nil {
		turn.Time = t.now()
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.closed {
		return fmt.Errorf("ledger: append to thread %s: %w", t.id, bare{ErrClosed})
	}
	t.mu.RLock()
	r := Record{Version: t.version + 1, Turn: &turn, Index: len(t.turns)}
	t.mu.RUnlock()
	if version >= 0 && r.Version != version+1 {
		return fmt.Errorf("ledger: append turn %d to thread %s: it is at version %d, not %d: %w", r.Index, t.id, r.Version-1, version, bare{ErrConflict})
	}
	if err := t.j.Commit(context.Background(), r); err != nil {
		return fmt.Errorf("ledger: append turn %d to thread %s: %w", r.Index, t.id, err)
	}
	t.mu.Lock()
	t.open.add(len(t.turns), turn)
	t.turns = append(t.turns, turn)
	t.version = r.Version
	t.mu.Unlock()
	return nil
}

// OpenCalls returns the tool calls still waiting for a result; see
// CallTracker.
func (t *StoredThread) OpenCalls() []OpenCall {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.open.clone()
}

// LateResults returns the results stored after a later non-tool turn than
// their call; see LateTracker.
func (t *StoredThread) LateResults() []LateResult {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.open.lateClone()
}

// Metadata returns the value stored under key.
func (t *StoredThread) Metadata(key string) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v, ok := t.meta[key]
	return v, ok
}

// AllMetadata returns a copy of the thread's metadata.
func (t *StoredThread) AllMetadata() map[string]string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return maps.Clone(t.meta)
}

// SetMetadata persists value under key and then makes it visible. Setting
// the value a key already has writes nothing. LeaseKey is refused: the
// lease changes only through AcquireLease, RenewLease and ReleaseLease.
func (t *StoredThread) SetMetadata(key, value string) error {
	if key == LeaseKey {
		return fmt.Errorf("ledger: set metadata %q on thread %s: the key is reserved for the thread's lease; use AcquireLease, RenewLease or ReleaseLease", key, t.id)
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.closed {
		return fmt.Errorf("ledger: set metadata %q on thread %s: %w", key, t.id, bare{ErrClosed})
	}
	t.mu.RLock()
	old, ok := t.meta[key]
	version := t.version
	t.mu.RUnlock()
	if ok && old == value {
		return nil
	}
	if err := t.commitMeta(context.Background(), version, key, value); err != nil {
		return fmt.Errorf("ledger: set metadata %q on thread %s: %w", key, t.id, err)
	}
	return nil
}

// commitMeta commits key=value as the change after version and publishes
// it; the caller holds wmu and read version under it.
func (t *StoredThread) commitMeta(ctx context.Context, version int64, key, value string) error {
	r := Record{Version: version + 1, Key: key, Value: value}
	if err := t.j.Commit(ctx, r); err != nil {
		return err
	}
	t.mu.Lock()
	m := maps.Clone(t.meta)
	if m == nil {
		m = make(map[string]string, 1)
	}
	m[key] = value
	t.meta = m
	t.version = r.Version
	t.mu.Unlock()
	return nil
}

// Reload replaces the State's history and metadata with what is stored now,
// as after ErrConflict. Snapshots handed out earlier are not changed.
func (t *StoredThread) Reload(ctx context.Context) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.closed {
		return fmt.Errorf("ledger: reload thread %s: %w", t.id, bare{ErrClosed})
	}
	snap, err := t.j.Read(ctx)
	if err != nil {
		return fmt.Errorf("ledger: reload thread %s: %w", t.id, err)
	}
	t.mu.Lock()
	t.version = snap.Version
	t.turns = slices.Clip(snap.Turns)
	t.open = trackAll(snap.Turns)
	t.meta = snap.Metadata
	t.mu.Unlock()
	return nil
}

// Close releases the journal. The history stays readable; changes fail
// with ErrClosed. Closing twice is not an error.
func (t *StoredThread) Close() error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if err := t.j.Close(); err != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("ledger: close thread %s: %w", t.id, err)
	}
	return nil
}

var (
	_ State       = (*StoredThread)(nil)
	_ CallTracker = (*StoredThread)(nil)
	_ CallTracker = (*Thread)(nil)
	_ LateTracker = (*StoredThread)(nil)
	_ LateTracker = (*Thread)(nil)
)
