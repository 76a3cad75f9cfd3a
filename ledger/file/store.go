package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lodeworks/lode/ledger"
)

const ext = ".journal"

// SyncPolicy says when journal writes are forced to stable storage with
// fsync. Every Append writes its record to the file before returning, so a
// crash of the process (kill -9) never loses a returned turn whatever the
// policy: fsync only matters when the machine itself stops (power loss,
// kernel panic), and costs a disk flush, often milliseconds.
//
// The zero value fsyncs every record: nothing returned is ever lost, at
// one flush per turn (on Linux, records of many threads written while a
// flush runs share the next flush of the file system; see the package
// documentation). Lease records (ledger.StoredThread.AcquireLease,
// RenewLease, ReleaseLease) are the exception: a lease binds only
// processes on this machine, which a machine crash ends too, so they are
// written without a flush of their own and made durable by the thread's
// next record. After a machine crash a thread may read as leased by its
// last synced lease, which lapses within that lease's ttl.
type SyncPolicy struct {
	// Count > 1 fsyncs once this many records were written since the last
	// fsync. Alone, it leaves the last records of a thread that goes quiet
	// unsynced until Close; Interval bounds that.
	Count int
	// Interval > 0 fsyncs at most this long after a record was written,
	// in the background; a failure is returned by the thread's next change.
	Interval time.Duration
	// None never fsyncs records (Close still does).
	None bool
}

func (p SyncPolicy) everyRecord() bool { return !p.None && p.Count <= 1 && p.Interval <= 0 }

// CorruptPolicy says what Load does with a journal damaged before its end.
type CorruptPolicy int

const (
	// FailOnCorrupt makes Load fail with a *CorruptError saying where the
	// damage is, and changes nothing on disk. The default.
	FailOnCorrupt CorruptPolicy = iota
	// TruncateCorrupt copies the whole journal aside (the copy is named in
	// the Repair), cuts it at the damaged record and loads what precedes
	// it. Records after the damage are kept only in the copy.
	TruncateCorrupt
)

// RepairKind names what a Repair did.
type RepairKind string

// The repairs Load makes.
const (
	// TornTail: the last record was cut short or damaged by a crash during
	// its write, and nothing valid followed; it was cut.
	TornTail RepairKind = "torn tail"
	// CorruptCut: damage before the end was cut under TruncateCorrupt.
	CorruptCut RepairKind = "corrupt cut"
)

// Repair reports a change Load made to a journal to make it readable.
type Repair struct {
	Kind   RepairKind
	ID     string
	Path   string
	Line   int   // first line removed
	Offset int64 // byte offset of that line
	Cut    int64 // bytes removed
	Reason string
	Backup string // path of the copy made before a CorruptCut
}

func (r Repair) String() string {
	s := fmt.Sprintf("file: %s in %s: cut %d bytes from line %d (byte offset %d): %s", r.Kind, r.Path, r.Cut, r.Line, r.Offset, r.Reason)
	if r.Backup != "" {
		s += "; the journal as it was is in " + r.Backup
	}
	return s
}

// CorruptError reports a journal damaged before its end. It matches
// ledger.ErrCorrupt.
type CorruptError struct {
	ID     string
	Path   string
	Line   int   // the damaged line, from 1
	Offset int64 // its byte offset
	Reason string
	Turns  int // whole turns before the damage
}

func (e *CorruptError) Error() string {
	if e.Line <= 1 {
		return fmt.Sprintf("file: journal %s is corrupt at line 1 (byte offset %d): %s; its thread header is unusable, so nothing in it can be loaded: restore the file from a backup, or delete it",
			e.Path, e.Offset, e.Reason)
	}
	return fmt.Sprintf("file: journal %s is corrupt at line %d (byte offset %d): %s; the %d turns before it are intact; open the store with WithCorruptPolicy(TruncateCorrupt) to load them and set the rest aside",
		e.Path, e.Line, e.Offset, e.Reason, e.Turns)
}

// Unwrap returns ledger.ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ledger.ErrCorrupt }

// Option configures a Store.
type Option func(*Store)

// WithSync sets when records are fsynced; see SyncPolicy.
func WithSync(p SyncPolicy) Option { return func(s *Store) { s.sync = p } }

// WithCorruptPolicy sets what Load does with a journal damaged before its
// end; see CorruptPolicy.
func WithCorruptPolicy(p CorruptPolicy) Option { return func(s *Store) { s.corrupt = p } }

// WithRepairFunc receives every repair Load makes; by default each is
// logged as a warning with slog.Default.
func WithRepairFunc(f func(Repair)) Option { return func(s *Store) { s.onRepair = f } }

// WithClock sets the clock that stamps turns and headers; nil leaves turns
// unstamped. The default is time.Now.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now; s.clockSet = true } }

// writer is the part of a journal file that writes; tests replace it to
// make the disk fail.
type writer interface {
	WriteAt(p []byte, off int64) (int, error)
	Sync() error
	Truncate(size int64) error
}

// Store keeps each thread in its own append-only journal, <id>.journal, in
// one directory. It is safe for concurrent use, and several Stores (in one
// process or many) may share a directory.
type Store struct {
	dir      string
	root     *os.Root
	sync     SyncPolicy
	corrupt  CorruptPolicy
	onRepair func(Repair)
	now      func() time.Time
	clockSet bool
	wrap     func(w writer) writer
	flushes  flushGroup
	syncAll  func(*os.File) error // flushes the file system f is on

	mu       sync.Mutex
	closed   bool
	journals map[*journal]struct{}
}

// Open returns a Store over dir, creating the directory if needed.
func Open(dir string, opts ...Option) (*Store, error) {
	s := &Store{dir: dir, journals: map[*journal]struct{}{}, syncAll: syncAll}
	for _, o := range opts {
		o(s)
	}
	if !s.clockSet {
		s.now = time.Now
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("file: open %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("file: open %s: %w", dir, err)
	}
	s.root = root
	return s, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(name string) string { return s.dir + string(os.PathSeparator) + name }

func (s *Store) stamp() time.Time {
	if s.now == nil {
		return time.Time{}
	}
	return s.now()
}

func (s *Store) report(r Repair) {
	if s.onRepair != nil {
		s.onRepair(r)
		return
	}
	slog.Default().Warn(r.String())
}

func (s *Store) writerFor(f *os.File) writer {
	if s.wrap != nil {
		return s.wrap(f)
	}
	return f
}

func (s *Store) check(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("file: %s: %w", op, ledger.ErrClosed)
	}
	return nil
}

// Create writes a new journal. The journal is written under a temporary
// name and linked into place complete, so no crash leaves a half-made
// thread behind.
func (s *Store) Create(ctx context.Context, opts ...ledger.ThreadOption) (*ledger.StoredThread, error) {
	if err := s.check("create"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("file: create: %w", err)
	}
	seed := ledger.NewThread(opts...)
	id := seed.ID()
	if err := ledger.CheckID(id); err != nil {
		return nil, fmt.Errorf("file: create: %w", err)
	}
	snap := ledger.Snapshot{Turns: slices.Clone(seed.Turns()), Metadata: seed.AllMetadata()}
	if snap.Metadata == nil {
		snap.Metadata = map[string]string{}
	}
	head, err := encodeHeader(headerRec{T: recThread, Format: formatVersion, ID: id, Time: s.stamp(), Meta: snap.Metadata})
	if err != nil {
		return nil, fmt.Errorf("file: create %s: %w", id, err)
	}
	buf := head
	for i := range snap.Turns {
		line, err := encodeRecord(ledger.Record{Version: int64(i + 1), Turn: &snap.Turns[i], Index: i})
		if err != nil {
			return nil, fmt.Errorf("file: create %s: turn %d: %w", id, i, err)
		}
		buf = append(buf, line...)
	}
	snap.Version = int64(len(snap.Turns))
	return s.write(id, buf, snap, "create")
}

// write makes the journal of thread id, holding buf, and returns the
// thread as snap. The journal is written under a temporary name and
// linked into place complete.
func (s *Store) write(id string, buf []byte, snap ledger.Snapshot, op string) (*ledger.StoredThread, error) {
	name := id + ext
	tmp := "." + id + "." + ledger.NewID()[:12] + ".tmp"
	f, err := s.root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("file: %s %s: %w", op, id, err)
	}
	fail := func(err error) (*ledger.StoredThread, error) {
		f.Close()
		s.root.Remove(tmp)
		return nil, fmt.Errorf("file: %s %s: %w", op, id, err)
	}
	w := s.writerFor(f)
	// The journal's syncs share flushes with every other thread's
	// records (see flushGroup): many threads made at once wait for a few.
	j := &journal{s: s, id: id, path: s.path(tmp), f: f, w: w, off: int64(len(buf))}
	if _, err := w.WriteAt(buf, 0); err != nil {
		return fail(fmt.Errorf("write %s: %w", s.path(tmp), err))
	}
	if !s.sync.None {
		if err := j.sync(); err != nil {
			return fail(fmt.Errorf("sync %s: %w", s.path(tmp), err))
		}
	}
	if err := s.root.Link(tmp, name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fail(fmt.Errorf("thread %q already exists: %w", id, ledger.ErrConflict))
		}
		return fail(err)
	}
	if err := s.root.Remove(tmp); err != nil {
		return fail(err)
	}
	j.path = s.path(name)
	if !s.sync.None {
		if err := j.syncDir(); err != nil {
			f.Close()
			return nil, fmt.Errorf("file: %s %s: %w", op, id, err)
		}
	}
	if err := s.register(j); err != nil {
		f.Close()
		return nil, err
	}
	return ledger.NewStoredThread(id, snap, j, s.now), nil
}

// Fork makes a fork as Create would make it with the kept turns
// (ledger.Forker), without encoding them again: the fork's journal is a
// new header, with the fork's metadata, and the parent's turn records up
// to the cut, renumbered and framed anew around the turns' JSON as the
// parent's journal holds it. The fork is a copy, written whole under a
// temporary name and linked into place, so a crash leaves no fork or a
// whole one, and the parent's journal is only read. A journal names no
// other file: sharing the parent's records would make Delete keep a
// parent alive for its forks.
func (s *Store) Fork(ctx context.Context, req ledger.ForkRequest) (*ledger.StoredThread, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("file: fork %s: %w", req.Parent, err)
	}
	if err := ledger.CheckID(req.ID); err != nil {
		return nil, fmt.Errorf("file: fork %s: %w", req.Parent, err)
	}
	f, err := s.open("fork", req.Parent, os.O_RDWR)
	if err != nil {
		return nil, err
	}
	pj := &journal{s: s, id: req.Parent, path: s.path(req.Parent + ext), f: f, w: s.writerFor(f)}
	p, err := pj.read(ctx, true)
	f.Close()
	if err != nil {
		return nil, err
	}
	var kept []ledger.Turn
	if req.At >= 0 && req.At <= len(p.snap.Turns) {
		kept = p.snap.Turns[:req.At:req.At]
	}
	meta, err := req.Plan(kept, len(p.snap.Turns), p.snap.Metadata)
	if err != nil {
		return nil, err // the ledger's, as Plan words it
	}
	buf, err := encodeHeader(headerRec{T: recThread, Format: formatVersion, ID: req.ID, Time: s.stamp(), Meta: meta})
	if err != nil {
		return nil, fmt.Errorf("file: fork %s as %s: %w", req.Parent, req.ID, err)
	}
	size := len(buf)
	for _, r := range p.raw[:len(kept)] {
		size += len(r) + prefixLen + 48
	}
	buf = slices.Grow(buf, size-len(buf))
	for i := range kept {
		if p.raw[i] != nil {
			buf, err = appendTurnRecord(buf, int64(i+1), p.raw[i])
		} else {
			var line []byte
			line, err = encodeRecord(ledger.Record{Version: int64(i + 1), Turn: &kept[i], Index: i})
			buf = append(buf, line...)
		}
		if err != nil {
			return nil, fmt.Errorf("file: fork %s as %s: turn %d: %w", req.Parent, req.ID, i, err)
		}
	}
	return s.write(req.ID, buf, ledger.Snapshot{Version: int64(len(kept)), Turns: kept, Metadata: meta}, "fork")
}

func encodeHeader(h headerRec) ([]byte, error) {
	payload, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return frame(nil, payload)
}

func (s *Store) syncDir() error {
	d, err := s.root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", s.dir, err)
	}
	return nil
}

func (s *Store) register(j *journal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("file: %s: %w", j.id, ledger.ErrClosed)
	}
	s.journals[j] = struct{}{}
	return nil
}

func (s *Store) forget(j *journal) {
	s.mu.Lock()
	delete(s.journals, j)
	s.mu.Unlock()
}

func (s *Store) open(op, id string, flag int) (*os.File, error) {
	if err := s.check(op); err != nil {
		return nil, err
	}
	if err := ledger.CheckID(id); err != nil {
		return nil, fmt.Errorf("file: %s: %w", op, err)
	}
	f, err := s.root.OpenFile(id+ext, flag, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("file: %s %s: %w", op, id, ledger.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("file: %s %s: %w", op, id, err)
	}
	return f, nil
}

// Load reads a thread's journal. A torn last record, left by a crash during
// its write, is cut and reported; damage before the end is handled by the
// store's CorruptPolicy.
func (s *Store) Load(ctx context.Context, id string) (*ledger.StoredThread, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("file: load %s: %w", id, err)
	}
	f, err := s.open("load", id, os.O_RDWR)
	if err != nil {
		return nil, err
	}
	j := &journal{s: s, id: id, path: s.path(id + ext), f: f, w: s.writerFor(f)}
	snap, err := j.Read(ctx)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := s.register(j); err != nil {
		f.Close()
		return nil, err
	}
	return ledger.NewStoredThread(id, snap, j, s.now), nil
}

// Delete removes a thread's journal. A State still open on it fails its
// next change with ledger.ErrNotFound.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("file: delete %s: %w", id, err)
	}
	f, err := s.open("delete", id, os.O_RDONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	// Under the lock no writer is mid-record, and every writer checks the
	// link count under the same lock before writing.
	if err := lock(f, true); err != nil {
		return fmt.Errorf("file: delete %s: lock: %w", id, err)
	}
	defer unlock(f)
	if _, linked, err := fileState(f); err != nil || !linked {
		return fmt.Errorf("file: delete %s: %w", id, ledger.ErrNotFound)
	}
	if err := s.root.Remove(id + ext); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("file: delete %s: %w", id, ledger.ErrNotFound)
		}
		return fmt.Errorf("file: delete %s: %w", id, err)
	}
	if !s.sync.None {
		if err := s.syncDir(); err != nil {
			return fmt.Errorf("file: delete %s: %w", id, err)
		}
	}
	return nil
}

// List yields every thread in ID order. It reads each journal whole, since
// metadata changes are records in it, checking the header, framing,
// checksums and record order, and repairs nothing. A journal Load would
// refuse for any of these (damage with whole records after it, a header
// that is missing, unreadable or another thread's) is yielded with its ID
// and a *CorruptError naming the file, line and byte offset, which matches
// ledger.ErrCorrupt; listing goes on with the next thread. A torn last
// record is not damage: List counts the turns before it, which is what
// Load keeps. Turns are not decoded, so a record whose checksum holds but
// whose turn does not decode (no disk fault makes one; only a foreign
// writer) is reported by Load alone.
func (s *Store) List(ctx context.Context) iter.Seq2[ledger.ThreadInfo, error] {
	return func(yield func(ledger.ThreadInfo, error) bool) {
		if err := s.check("list"); err != nil {
			yield(ledger.ThreadInfo{}, err)
			return
		}
		d, err := s.root.Open(".")
		if err != nil {
			yield(ledger.ThreadInfo{}, fmt.Errorf("file: list: %w", err))
			return
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			yield(ledger.ThreadInfo{}, fmt.Errorf("file: list: %w", err))
			return
		}
		var ids []string
		for _, n := range names {
			if id, ok := strings.CutSuffix(n, ext); ok && ledger.CheckID(id) == nil {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				yield(ledger.ThreadInfo{}, fmt.Errorf("file: list: %w", err))
				return
			}
			info, err := s.info(id)
			if errors.Is(err, ledger.ErrNotFound) {
				continue // deleted while listing
			}
			if !yield(info, err) {
				return
			}
		}
	}
}

func (s *Store) info(id string) (ledger.ThreadInfo, error) {
	info := ledger.ThreadInfo{ID: id}
	f, err := s.open("list", id, os.O_RDONLY)
	if err != nil {
		return info, err
	}
	defer f.Close()
	if err := lock(f, false); err != nil {
		return info, fmt.Errorf("file: list %s: lock: %w", id, err)
	}
	defer unlock(f)
	fi, err := f.Stat()
	if err != nil {
		return info, fmt.Errorf("file: list %s: %w", id, err)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil {
		return info, fmt.Errorf("file: list %s: %w", id, err)
	}
	p := parse(data, true)
	p.own(id)
	if p.unusable() {
		return info, &CorruptError{ID: id, Path: s.path(id + ext), Line: p.problem.line, Offset: p.problem.offset, Reason: p.problem.reason, Turns: len(p.snap.Turns)}
	}
	info.Turns = len(p.snap.Turns)
	info.Metadata = p.snap.Metadata
	info.Created = p.header.Time
	info.Updated = fi.ModTime()
	return info, nil
}

// Close closes every journal the store opened, fsyncing what is pending.
// Threads it handed out stay readable; their changes fail with
// ledger.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	js := make([]*journal, 0, len(s.journals))
	for j := range s.journals {
		js = append(js, j)
	}
	s.mu.Unlock()
	var errs []error
	for _, j := range js {
		errs = append(errs, j.Close())
	}
	errs = append(errs, s.root.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("file: close: %w", err)
	}
	return nil
}

var (
	_ ledger.Store  = (*Store)(nil)
	_ ledger.Forker = (*Store)(nil)
)
