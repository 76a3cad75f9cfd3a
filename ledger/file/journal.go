package file

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/lodeworks/lode/ledger"
)

// journal is one open thread journal: the ledger.Journal of a StoredThread.
//
// A change is one record written at the end of the file under the file's
// exclusive lock. Before writing, the journal checks that the file still
// ends where it last saw it end; if not, another writer appended and the
// change fails with ledger.ErrConflict. That check is an fstat, so an
// append costs the same whatever the length of the thread.
type journal struct {
	s    *Store
	id   string
	path string
	f    *os.File
	w    writer

	mu       sync.Mutex
	closed   bool
	off      int64 // end of the last record this journal knows
	dirty    bool  // a failed write may have left bytes past off
	unsynced int   // records written since the last fsync
	timer    *time.Timer
	syncErr  error // a background fsync failed
}

func (j *journal) Commit(_ context.Context, r ledger.Record) error {
	line, err := encodeRecord(r)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return fmt.Errorf("file: %s: %w", j.path, ledger.ErrClosed)
	}
	if err := j.syncErr; err != nil {
		return fmt.Errorf("an earlier background fsync of %s failed, so turns already returned may not be durable; reload the thread: %w", j.path, err)
	}
	if err := lock(j.f, true); err != nil {
		return fmt.Errorf("lock %s: %w", j.path, err)
	}
	defer unlock(j.f)
	size, linked, err := fileState(j.f)
	if err != nil {
		return fmt.Errorf("stat %s: %w", j.path, err)
	}
	if !linked {
		return fmt.Errorf("%s was deleted: %w", j.path, ledger.ErrNotFound)
	}
	if size != j.off {
		if err := j.cutOwnTail(size); err != nil {
			return err
		}
	}
	if _, err := j.w.WriteAt(line, j.off); err != nil {
		j.undo()
		return fmt.Errorf("write %s: %w", j.path, err)
	}
	pol := j.s.sync
	switch {
	case pol.everyRecord() && leaseRecord(r):
		// A lease binds only processes on this machine, and whatever
		// loses the record unsynced (a power cut, an OS crash) ended
		// them all: the thread then reads as its last synced lease
		// says, which lapses within its ttl. The thread's next synced
		// record carries this one; no flush of its own, not even at
		// Close.
	case pol.everyRecord():
		if err := j.sync(); err != nil {
			j.undo()
			return fmt.Errorf("sync %s: %w", j.path, err)
		}
	case pol.None:
		j.unsynced++
	default:
		j.unsynced++
		if pol.Count > 1 && j.unsynced >= pol.Count {
			if err := j.w.Sync(); err != nil {
				j.undo()
				return fmt.Errorf("sync %s: %w", j.path, err)
			}
			j.unsynced = 0
			if j.timer != nil {
				j.timer.Stop()
				j.timer = nil
			}
		} else if pol.Interval > 0 && j.timer == nil {
			j.timer = time.AfterFunc(pol.Interval, j.backgroundSync)
		}
	}
	j.off += int64(len(line))
	return nil
}

// sync makes the record just written durable, sharing the flush with
// other threads' records where the system allows (see flushGroup).
func (j *journal) sync() error {
	if !canSyncAll {
		return j.w.Sync()
	}
	return j.s.flushes.sync(j, false)
}

// syncDir makes the store's directory durable, as it names j's journal
// now, sharing the flush as sync does.
func (j *journal) syncDir() error {
	if !canSyncAll {
		return j.s.syncDir()
	}
	return j.s.flushes.sync(j, true)
}

// leaseRecord reports whether r takes, renews or releases a thread's lease.
func leaseRecord(r ledger.Record) bool { return r.Turn == nil && r.Key == ledger.LeaseKey }

// cutOwnTail handles a file that does not end where this journal last saw
// it end. Bytes left by this journal's own failed write are cut; anything
// else is another writer's doing.
func (j *journal) cutOwnTail(size int64) error {
	conflict := fmt.Errorf("%s is %d bytes but this thread last saw %d: another writer changed it: %w", j.path, size, j.off, ledger.ErrConflict)
	if !j.dirty || size < j.off {
		return conflict
	}
	tail := make([]byte, size-j.off)
	if _, err := j.f.ReadAt(tail, j.off); err != nil {
		return fmt.Errorf("read %s: %w", j.path, err)
	}
	if _, _, err := nextRecord(tail); err == nil {
		// A whole record: the failed write landed after all, or another
		// writer cut our torn bytes and appended. Either way, reload.
		j.dirty = false
		return conflict
	}
	if err := j.w.Truncate(j.off); err != nil {
		return fmt.Errorf("cut the torn record a failed write left in %s: %w", j.path, err)
	}
	j.dirty = false
	return nil
}

// undo cuts what a failed write may have left; if even that fails, the
// next change (or the next Load) cuts it.
func (j *journal) undo() {
	j.dirty = true
	if err := j.w.Truncate(j.off); err == nil {
		j.dirty = false
	}
}

func (j *journal) backgroundSync() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.timer = nil
	if j.closed || j.unsynced == 0 {
		return
	}
	if err := j.w.Sync(); err != nil {
		j.syncErr = err
		return
	}
	j.unsynced = 0
}

// Read reads the journal whole, cutting a torn tail and applying the
// store's CorruptPolicy.
func (j *journal) Read(ctx context.Context) (ledger.Snapshot, error) {
	p, err := j.read(ctx, false)
	return p.snap, err
}

// read is Read, keeping each turn's JSON as stored when keepRaw is set.
func (j *journal) read(ctx context.Context, keepRaw bool) (parsed, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return parsed{}, fmt.Errorf("file: %s: %w", j.path, ledger.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return parsed{}, fmt.Errorf("file: load %s: %w", j.id, err)
	}
	if err := lock(j.f, true); err != nil {
		return parsed{}, fmt.Errorf("file: lock %s: %w", j.path, err)
	}
	defer unlock(j.f)
	size, linked, err := fileState(j.f)
	if err != nil {
		return parsed{}, fmt.Errorf("file: stat %s: %w", j.path, err)
	}
	if !linked {
		return parsed{}, fmt.Errorf("file: load %s: %w", j.id, ledger.ErrNotFound)
	}
	data := make([]byte, size)
	if _, err := j.f.ReadAt(data, 0); err != nil {
		return parsed{}, fmt.Errorf("file: read %s: %w", j.path, err)
	}
	p := parseInto(parsed{keepRaw: keepRaw}, data, false)
	p.own(j.id)
	if pr := p.problem; pr != nil {
		corrupt := &CorruptError{ID: j.id, Path: j.path, Line: pr.line, Offset: pr.offset, Reason: pr.reason, Turns: len(p.snap.Turns)}
		if p.lines == 0 || (!pr.tail && j.s.corrupt != TruncateCorrupt) {
			return parsed{}, corrupt
		}
		rep := Repair{Kind: TornTail, ID: j.id, Path: j.path, Line: pr.line, Offset: pr.offset, Cut: size - p.good, Reason: pr.reason}
		if !pr.tail {
			rep.Kind = CorruptCut
			backup := j.id + ext + ".corrupt-" + ledger.NewID()[:12]
			if err := j.s.root.WriteFile(backup, data, 0o600); err != nil {
				return parsed{}, fmt.Errorf("%w (saving a copy before cutting failed: %v)", corrupt, err)
			}
			rep.Backup = j.s.path(backup)
		}
		if err := j.w.Truncate(p.good); err != nil {
			return parsed{}, fmt.Errorf("file: cut %s at byte %d: %w", j.path, p.good, err)
		}
		if !j.s.sync.None {
			if err := j.w.Sync(); err != nil {
				return parsed{}, fmt.Errorf("file: sync %s: %w", j.path, err)
			}
		}
		j.s.report(rep)
	}
	j.off = p.good
	j.dirty = false
	j.syncErr = nil
	return p, nil
}

func (j *journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if j.timer != nil {
		j.timer.Stop()
		j.timer = nil
	}
	var serr error
	if j.unsynced > 0 {
		if serr = j.w.Sync(); serr != nil {
			serr = fmt.Errorf("sync %s: %w", j.path, serr)
		}
	}
	cerr := j.f.Close()
	j.s.forget(j)
	return errors.Join(serr, cerr)
}
