package file_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/ledger/ledgertest"
)

func opener(opts ...file.Option) func(t testing.TB) ledgertest.Opener {
	return func(t testing.TB) ledgertest.Opener {
		dir := t.TempDir()
		return func(t testing.TB) ledger.Store {
			s, err := file.Open(dir, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
}

func TestContract(t *testing.T) {
	ledgertest.Run(t, opener())
}

// A garbled journal is listed as damaged, not as an empty thread.
func TestContractDamaged(t *testing.T) {
	ledgertest.RunDamaged(t, func(t testing.TB) (ledgertest.Opener, ledgertest.Damage) {
		dir := t.TempDir()
		damage := func(t testing.TB, id string) {
			if err := os.WriteFile(filepath.Join(dir, id+".journal"), []byte("garbled by the disk"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		open := func(t testing.TB) ledger.Store {
			s, err := file.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		return open, damage
	})
}

func TestContractBatchedSync(t *testing.T) {
	ledgertest.Run(t, opener(file.WithSync(file.SyncPolicy{Count: 4, Interval: time.Millisecond})))
}

func TestCrash(t *testing.T) {
	var torn atomic.Int32
	ledgertest.Crash(t, "TestCrash", func(dir string) (ledger.Store, error) {
		return file.Open(dir, file.WithRepairFunc(func(r file.Repair) {
			if r.Kind != file.TornTail {
				panic(r.String())
			}
			torn.Add(1)
		}))
	}, 1, 9, 30, 2, 55)
	t.Logf("torn tails cut: %d", torn.Load())
}

// repairs collects the repairs a store reports.
type repairs struct {
	mu  sync.Mutex
	got []file.Repair
}

func (r *repairs) add(x file.Repair) { r.mu.Lock(); r.got = append(r.got, x); r.mu.Unlock() }

func (r *repairs) list() []file.Repair {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]file.Repair(nil), r.got...)
}

// threadWith creates thread id in dir holding n turns and returns the
// journal's path and bytes.
func threadWith(t *testing.T, dir, id string, n int) (string, []byte) {
	t.Helper()
	s, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Create(context.Background(), ledger.WithID(id))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := st.Append(ledger.RoleUser, ledgertest.Text(fmt.Sprint("turn ", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, id+".journal")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

func lineOffsets(data []byte) []int {
	offs := []int{0}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			offs = append(offs, i+1)
		}
	}
	return offs
}

func checkTurns(t *testing.T, st *ledger.StoredThread, n int) {
	t.Helper()
	turns := st.Turns()
	if len(turns) != n {
		t.Fatalf("%d turns, want %d", len(turns), n)
	}
	for i, tu := range turns {
		if tu.Artifacts[0] != ledgertest.Text(fmt.Sprint("turn ", i)) {
			t.Fatalf("turn %d is %v", i, tu.Artifacts)
		}
	}
}

func TestJournalFormat(t *testing.T) {
	_, data := threadWith(t, t.TempDir(), "fmt", 2)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	for i, l := range lines {
		var n, crc uint32
		var payload string
		if _, err := fmt.Sscanf(l[:18], "%08x %08x ", &n, &crc); err != nil {
			t.Fatalf("line %d prefix: %v", i, err)
		}
		payload = l[18:]
		if int(n) != len(payload) || !json.Valid([]byte(payload)) {
			t.Fatalf("line %d: length %d for %d bytes, or not JSON: %s", i, n, len(payload), payload)
		}
	}
	if !strings.Contains(lines[0], `"t":"thread"`) || !strings.Contains(lines[2], `{"t":"turn","n":2,"turn":{"role":"user","artifacts":[{"kind":"text","content":"turn 1"}]`) {
		t.Fatalf("unexpected records:\n%s", data)
	}
}

func TestTornTailIsCutAndReported(t *testing.T) {
	_, whole := threadWith(t, t.TempDir(), "x", 1)
	last := whole[lineOffsets(whole)[1]:] // a whole turn record
	cases := []struct {
		name, reason string
		tail         []byte
	}{
		{"half a record", "cut off", last[:len(last)/2]},
		{"record without its newline", "cut off", last[:len(last)-1]},
		{"prefix only", "cut off", last[:10]},
		{"zeros from a lost block", "malformed record header", make([]byte, 4096)},
		{"bad checksum", "checksum mismatch", append([]byte("00000002 00000000 {}"), '\n')},
		{"garbage line", "line too short", []byte("garbage\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, data := threadWith(t, dir, "torn", 3)
			if err := os.WriteFile(path, append(bytes.Clone(data), c.tail...), 0o600); err != nil {
				t.Fatal(err)
			}
			var rep repairs
			s, err := file.Open(dir, file.WithRepairFunc(rep.add))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			st, err := s.Load(context.Background(), "torn")
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			checkTurns(t, st, 3)
			got := rep.list()
			if len(got) != 1 {
				t.Fatalf("repairs %+v", got)
			}
			r := got[0]
			if r.Kind != file.TornTail || r.ID != "torn" || r.Path != path || r.Line != 5 || r.Offset != int64(len(data)) ||
				r.Cut != int64(len(c.tail)) || !strings.Contains(r.Reason, c.reason) || r.Backup != "" {
				t.Fatalf("repair %+v", r)
			}
			if !strings.Contains(r.String(), fmt.Sprintf("torn tail in %s: cut %d bytes from line 5", path, len(c.tail))) {
				t.Fatalf("repair text %q", r)
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, data) {
				t.Fatal("the journal was not cut back to its last whole record")
			}
			if err := st.Append(ledger.RoleUser, ledgertest.Text("turn 3")); err != nil {
				t.Fatal(err)
			}
			again, err := s.Load(context.Background(), "torn")
			if err != nil {
				t.Fatal(err)
			}
			checkTurns(t, again, 4)
			if len(rep.list()) != 1 {
				t.Fatal("a clean journal was repaired again")
			}
		})
	}
}

func TestTornTailIsLoggedByDefault(t *testing.T) {
	dir := t.TempDir()
	path, data := threadWith(t, dir, "torn", 1)
	if err := os.WriteFile(path, append(data, "0000"...), 0o600); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(old)
	s, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Load(context.Background(), "torn"); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("level=WARN msg=\"file: torn tail in %s: cut 4 bytes from line 3", path)
	if !strings.Contains(logged.String(), want) {
		t.Fatalf("logged %q, want %q", logged.String(), want)
	}
}

func TestCorruptMiddle(t *testing.T) {
	// Journal lines: 1 header, 2..6 turns 0..4. Each case damages line 3
	// (turn 1), which whole records follow.
	cases := []struct {
		name   string
		damage func(data []byte, offs []int) []byte
		reason string
	}{
		{"flipped payload byte", func(d []byte, o []int) []byte { d[o[2]+40] ^= 0x20; return d }, "checksum mismatch"},
		{"damaged length", func(d []byte, o []int) []byte { d[o[2]] = 'z'; return d }, "malformed record header"},
		{"lost newline", func(d []byte, o []int) []byte { d[o[3]-1] = ' '; return d }, "not followed by a newline"},
		{"record cut short", func(d []byte, o []int) []byte { return append(d[:o[2]+30:o[2]+30], d[o[3]:]...) }, "not followed by a newline"},
		{"record repeated", func(d []byte, o []int) []byte {
			return append(append(d[:o[2]:o[2]], d[o[1]:o[2]]...), d[o[3]:]...)
		}, "record number 1 out of sequence (want 2)"},
		{"unknown record type", func(d []byte, o []int) []byte {
			line := frameLine(`{"t":"bookmark","n":2}`)
			return append(append(d[:o[2]:o[2]], line...), d[o[3]:]...)
		}, `unknown record type "bookmark"`},
		{"undecodable turn", func(d []byte, o []int) []byte {
			line := frameLine(`{"t":"turn","n":2,"turn":{"role":"user","artifacts":[{"content":"no kind"}]}}`)
			return append(append(d[:o[2]:o[2]], line...), d[o[3]:]...)
		}, `record does not decode`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, data := threadWith(t, dir, "bad", 5)
			offs := lineOffsets(data)
			damaged := c.damage(bytes.Clone(data), offs)
			if err := os.WriteFile(path, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			threadWith(t, dir, "fine", 1)

			s, err := file.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Load(context.Background(), "bad")
			var ce *file.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ledger.ErrCorrupt) {
				t.Fatalf("load: %v, want a *CorruptError", err)
			}
			if ce.Line != 3 || ce.Offset != int64(offs[2]) || ce.Turns != 1 || !strings.Contains(ce.Reason, c.reason) {
				t.Fatalf("corrupt error %+v, want line 3 at %d: %s", ce, offs[2], c.reason)
			}
			for _, m := range []string{path, "corrupt at line 3", fmt.Sprintf("byte offset %d", offs[2]), "the 1 turns before it are intact", "TruncateCorrupt"} {
				if !strings.Contains(err.Error(), m) {
					t.Fatalf("error %q does not say %q", err, m)
				}
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, damaged) {
				t.Fatal("FailOnCorrupt changed the journal")
			}
			// Listing reports the damaged thread and goes on.
			var listed []string
			for info, err := range s.List(context.Background()) {
				if info.ID == "bad" {
					// List checks framing and order, not the content of turns.
					if c.name == "undecodable turn" && err == nil {
						listed = append(listed, "bad!")
						continue
					}
					if !errors.Is(err, ledger.ErrCorrupt) {
						t.Fatalf("list bad: %v", err)
					}
					listed = append(listed, "bad!")
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				listed = append(listed, info.ID)
			}
			if strings.Join(listed, ",") != "bad!,fine" {
				t.Fatalf("listed %v", listed)
			}
			s.Close()

			var rep repairs
			s, err = file.Open(dir, file.WithCorruptPolicy(file.TruncateCorrupt), file.WithRepairFunc(rep.add))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			st, err := s.Load(context.Background(), "bad")
			if err != nil {
				t.Fatalf("load with TruncateCorrupt: %v", err)
			}
			checkTurns(t, st, 1)
			got := rep.list()
			if len(got) != 1 || got[0].Kind != file.CorruptCut || got[0].Line != 3 || got[0].Cut != int64(len(damaged)-offs[2]) {
				t.Fatalf("repairs %+v", got)
			}
			if backup, err := os.ReadFile(got[0].Backup); err != nil || !bytes.Equal(backup, damaged) {
				t.Fatalf("backup %s: %v (same bytes: %v)", got[0].Backup, err, bytes.Equal(backup, damaged))
			}
			if err := st.Append(ledger.RoleUser, ledgertest.Text("turn 1")); err != nil {
				t.Fatal(err)
			}
			again, err := s.Load(context.Background(), "bad")
			if err != nil {
				t.Fatal(err)
			}
			checkTurns(t, again, 2)
		})
	}
}

func frameLine(payload string) []byte {
	sum := crc32.Checksum([]byte(payload), crc32.MakeTable(crc32.Castagnoli))
	return fmt.Appendf(nil, "%08x %08x %s\n", len(payload), sum, payload)
}

// A journal without a usable header is refused by Load under every
// policy, and List reports it with the same *CorruptError, never as an
// empty thread, and goes on listing.
func TestUnreadableHeader(t *testing.T) {
	cases := []struct {
		name    string
		journal func(data []byte) []byte
		reason  string
	}{
		{"empty file", func([]byte) []byte { return nil }, "journal has no thread header"},
		{"torn header", func(d []byte) []byte { return d[:20] }, "record cut off by the end of the journal"},
		{"future format", func(d []byte) []byte {
			return append(frameLine(`{"t":"thread","format":2,"id":"h"}`), d[lineOffsets(d)[1]:]...)
		}, "journal format 2 is not supported (this version reads 1)"},
		{"no header", func(d []byte) []byte { return d[lineOffsets(d)[1]:] }, `first record is "turn", want the thread header`},
		{"another thread's journal", func(d []byte) []byte {
			return append(frameLine(`{"t":"thread","format":1,"id":"other"}`), d[lineOffsets(d)[1]:]...)
		}, `journal belongs to thread "other"`},
		{"another thread's journal, torn tail", func(d []byte) []byte {
			return append(append(frameLine(`{"t":"thread","format":1,"id":"other"}`), d[lineOffsets(d)[1]:]...), "0000"...)
		}, `journal belongs to thread "other"`},
		{"garbage", func([]byte) []byte { return []byte("this is not a journal at all") }, "malformed record header (want length and checksum in hex)"},
		{"garbage lines", func([]byte) []byte { return []byte("hello\nworld\n") }, "line too short for a record header"},
		{"short garbage", func([]byte) []byte { return []byte("{}") }, "record cut off by the end of the journal"},
		{"zeros", func(d []byte) []byte { return make([]byte, len(d)) }, "malformed record header (want length and checksum in hex)"},
		{"header not JSON", func(d []byte) []byte { return append(frameLine(`thread h`), d[lineOffsets(d)[1]:]...) }, "record does not decode: invalid character 'h' in literal true (expecting 'r')"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, data := threadWith(t, dir, "h", 1)
			threadWith(t, dir, "i", 2)
			if err := os.WriteFile(path, c.journal(data), 0o600); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("file: journal %s is corrupt at line 1 (byte offset 0): %s; its thread header is unusable, so nothing in it can be loaded: restore the file from a backup, or delete it", path, c.reason)
			check := func(what string, err error) {
				t.Helper()
				var ce *file.CorruptError
				if !errors.As(err, &ce) || !errors.Is(err, ledger.ErrCorrupt) || err.Error() != want {
					t.Fatalf("%s: %v\nwant %s", what, err, want)
				}
				if ce.ID != "h" || ce.Path != path || ce.Line != 1 || ce.Offset != 0 || ce.Reason != c.reason || ce.Turns != 0 {
					t.Fatalf("%s: %+v", what, ce)
				}
			}
			for _, policy := range []file.CorruptPolicy{file.FailOnCorrupt, file.TruncateCorrupt} {
				s, err := file.Open(dir, file.WithCorruptPolicy(policy))
				if err != nil {
					t.Fatal(err)
				}
				var listed []string
				for info, err := range s.List(context.Background()) {
					if info.ID == "h" {
						check("list", err)
						listed = append(listed, "h!")
						continue
					}
					if err != nil || info.Turns != 2 {
						t.Fatalf("list %s: %+v, %v", info.ID, info, err)
					}
					listed = append(listed, info.ID)
				}
				if strings.Join(listed, ",") != "h!,i" {
					t.Fatalf("listed %v", listed)
				}
				_, err = s.Load(context.Background(), "h")
				check("load", err)
				s.Close()
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, c.journal(data)) {
				t.Fatal("the journal was changed")
			}
		})
	}
}

// faultyDisk wraps journal writers to fail on demand, as a full or broken
// disk would.
type faultyDisk struct {
	mu            sync.Mutex
	writeBytes    int // with failWrite: how much of the write lands first
	failWrite     bool
	failSync      bool
	failTruncate  bool
	syncs         int
	synced        chan struct{}
	writeAttempts int
}

func (d *faultyDisk) set(f func(d *faultyDisk)) { d.mu.Lock(); f(d); d.mu.Unlock() }

func (d *faultyDisk) count() int { d.mu.Lock(); defer d.mu.Unlock(); return d.syncs }

func (d *faultyDisk) wrap(w file.Writer) file.Writer { return &faultyWriter{w: w, d: d} }

type faultyWriter struct {
	w file.Writer
	d *faultyDisk
}

func (f *faultyWriter) WriteAt(p []byte, off int64) (int, error) {
	f.d.mu.Lock()
	f.d.writeAttempts++
	fail, n := f.d.failWrite, f.d.writeBytes
	f.d.mu.Unlock()
	if !fail {
		return f.w.WriteAt(p, off)
	}
	n = min(n, len(p))
	if n > 0 {
		if _, err := f.w.WriteAt(p[:n], off); err != nil {
			return 0, err
		}
	}
	return n, &os.PathError{Op: "write", Path: "journal", Err: syscall.ENOSPC}
}

func (f *faultyWriter) Sync() error {
	f.d.mu.Lock()
	fail := f.d.failSync
	f.d.syncs++
	ch := f.d.synced
	f.d.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	if fail {
		return &os.PathError{Op: "sync", Path: "journal", Err: syscall.EIO}
	}
	return f.w.Sync()
}

func (f *faultyWriter) Truncate(size int64) error {
	f.d.mu.Lock()
	fail := f.d.failTruncate
	f.d.mu.Unlock()
	if fail {
		return &os.PathError{Op: "truncate", Path: "journal", Err: syscall.EIO}
	}
	return f.w.Truncate(size)
}

func TestDiskFailures(t *testing.T) {
	cases := []struct {
		name  string
		fault func(d *faultyDisk)
		want  error
		msg   string
		torn  bool // the journal is left with a torn record
	}{
		{"disk full mid-record", func(d *faultyDisk) { d.failWrite, d.writeBytes = true, 25 }, syscall.ENOSPC, "no space left on device", false},
		{"disk full before writing", func(d *faultyDisk) { d.failWrite = true }, syscall.ENOSPC, "no space left on device", false},
		{"fsync fails", func(d *faultyDisk) { d.failSync = true }, syscall.EIO, "sync", false},
		{"disk full and cannot cut", func(d *faultyDisk) { d.failWrite, d.writeBytes, d.failTruncate = true, 25, true }, syscall.ENOSPC, "no space left on device", true},
	}
	for _, c := range cases {
		for _, next := range []string{"same state", "fresh load"} {
			t.Run(c.name+"/"+next, func(t *testing.T) {
				dir := t.TempDir()
				disk := &faultyDisk{}
				var rep repairs
				s, err := file.Open(dir, file.WithWriter(disk.wrap), file.WithRepairFunc(rep.add))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				st, err := s.Create(context.Background(), ledger.WithID("d"))
				if err != nil {
					t.Fatal(err)
				}
				for i := range 2 {
					if err := st.Append(ledger.RoleUser, ledgertest.Text(fmt.Sprint("turn ", i))); err != nil {
						t.Fatal(err)
					}
				}
				path := filepath.Join(dir, "d.journal")
				good, _ := os.ReadFile(path)

				disk.set(c.fault)
				err = st.Append(ledger.RoleUser, ledgertest.Text("lost"))
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "append turn 2 to thread d") {
					t.Fatalf("append: %v, want %v mentioning %q", err, c.want, c.msg)
				}
				checkTurns(t, st, 2)
				now, _ := os.ReadFile(path)
				if c.torn != !bytes.Equal(now, good) || !bytes.HasPrefix(now, good) {
					t.Fatalf("journal after the failure: %d bytes, %d before (torn expected: %v)", len(now), len(good), c.torn)
				}
				disk.set(func(d *faultyDisk) { d.failWrite, d.failSync, d.failTruncate = false, false, false })

				target := st
				if next == "fresh load" {
					if target, err = s.Load(context.Background(), "d"); err != nil {
						t.Fatal(err)
					}
					if got := rep.list(); c.torn != (len(got) == 1 && got[0].Kind == file.TornTail) {
						t.Fatalf("repairs %+v (torn tail expected: %v)", got, c.torn)
					}
				}
				checkTurns(t, target, 2)
				if err := target.Append(ledger.RoleUser, ledgertest.Text("turn 2")); err != nil {
					t.Fatalf("append once the disk is back: %v", err)
				}
				again, err := s.Load(context.Background(), "d")
				if err != nil {
					t.Fatal(err)
				}
				checkTurns(t, again, 3)
			})
		}
	}
}

func TestCreateOnFullDiskLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	disk := &faultyDisk{failWrite: true, writeBytes: 10}
	s, err := file.Open(dir, file.WithWriter(disk.wrap))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Create(context.Background(), ledger.WithID("new"))
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "create new") {
		t.Fatalf("create: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
	if _, err := s.Load(context.Background(), "new"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("load: %v", err)
	}
}

func TestSyncPolicy(t *testing.T) {
	cases := []struct {
		name        string
		policy      file.SyncPolicy
		afterAppend int // fsyncs after 7 appends (creation excluded)
		afterClose  int
	}{
		{"every turn (zero value)", file.SyncPolicy{}, 7, 7},
		{"count 1 is every turn", file.SyncPolicy{Count: 1}, 7, 7},
		{"every 3 turns", file.SyncPolicy{Count: 3}, 2, 3},
		{"none", file.SyncPolicy{None: true}, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			disk := &faultyDisk{}
			s, err := file.Open(t.TempDir(), file.WithSync(c.policy), file.WithWriter(disk.wrap))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			st, err := s.Create(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			disk.set(func(d *faultyDisk) { d.syncs = 0 })
			for range 7 {
				if err := st.Append(ledger.RoleUser, ledgertest.Text("x")); err != nil {
					t.Fatal(err)
				}
			}
			if n := disk.count(); n != c.afterAppend {
				t.Fatalf("%d fsyncs after 7 appends, want %d", n, c.afterAppend)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if n := disk.count(); n != c.afterClose {
				t.Fatalf("%d fsyncs after close, want %d", n, c.afterClose)
			}
		})
	}
}

// Lease records are not fsynced on their own (a lease binds only
// processes that a machine crash ends too): the thread's next record's
// fsync carries them, and Close adds none for them.
func TestSyncLease(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	steps := []struct {
		name  string
		do    func(st *ledger.StoredThread) error
		syncs int // fsyncs so far
	}{
		{"acquire", func(st *ledger.StoredThread) error {
			_, err := st.AcquireLease(ctx, "a", now, time.Minute)
			return err
		}, 0},
		{"renew", func(st *ledger.StoredThread) error { return st.RenewLease(ctx, "a", now, time.Minute) }, 0},
		{"append", func(st *ledger.StoredThread) error { return st.Append(ledger.RoleUser, ledgertest.Text("x")) }, 1},
		{"renew again", func(st *ledger.StoredThread) error { return st.RenewLease(ctx, "a", now, time.Minute) }, 1},
		{"release", func(st *ledger.StoredThread) error { return st.ReleaseLease(ctx, "a") }, 1},
		{"close", func(st *ledger.StoredThread) error { return st.Close() }, 1},
	}
	disk := &faultyDisk{}
	s, err := file.Open(t.TempDir(), file.WithWriter(disk.wrap))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	disk.set(func(d *faultyDisk) { d.syncs = 0 })
	for _, step := range steps {
		if err := step.do(st); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if n := disk.count(); n != step.syncs {
			t.Fatalf("after %s: %d fsyncs, want %d", step.name, n, step.syncs)
		}
	}
	// What was written unsynced is in the file all the same.
	st, err = s.Load(ctx, st.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if l, err := st.Lease(); err != nil || l.Owner != "" || st.Len() != 1 {
		t.Fatalf("reloaded: lease %+v (%v), %d turns; want released, 1 turn", l, err, st.Len())
	}
}

func TestSyncInterval(t *testing.T) {
	synced := make(chan struct{}, 1)
	disk := &faultyDisk{}
	s, err := file.Open(t.TempDir(), file.WithSync(file.SyncPolicy{Count: 1000, Interval: time.Millisecond}), file.WithWriter(disk.wrap))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Create(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	disk.set(func(d *faultyDisk) { d.synced = synced; d.failSync = true })
	if err := st.Append(ledger.RoleUser, ledgertest.Text("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-synced:
	case <-time.After(10 * time.Second):
		t.Fatal("no background fsync")
	}
	// The signal comes from inside the fsync, which runs under the
	// journal's lock: the failure is recorded before the next change.
	aerr := st.Append(ledger.RoleUser, ledgertest.Text("y"))
	if !errors.Is(aerr, syscall.EIO) || !strings.Contains(aerr.Error(), "earlier background fsync") {
		t.Fatalf("append after a failed background fsync: %v", aerr)
	}
	disk.set(func(d *faultyDisk) { d.failSync = false; d.synced = nil })
	if err := st.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ledger.RoleUser, ledgertest.Text("z")); err != nil {
		t.Fatalf("append after reload: %v", err)
	}
}

func TestOpenFails(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := file.Open(filepath.Join(blocker, "sub"))
	if err == nil || !strings.Contains(err.Error(), "file: open "+blocker) {
		t.Fatalf("open under a file: %v", err)
	}
}

func TestListSkipsStrayFiles(t *testing.T) {
	dir := t.TempDir()
	threadWith(t, dir, "real", 1)
	for _, name := range []string{".real.abc.tmp", "notes.txt", ".hidden.journal", "real.journal.corrupt-1"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for info, err := range s.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	if strings.Join(ids, ",") != "real" {
		t.Fatalf("listed %v", ids)
	}
}

func TestLeaseCrash(t *testing.T) {
	ledgertest.LeaseCrash(t, "TestLeaseCrash", func(t testing.TB) string { return t.TempDir() },
		func(dir string) (ledger.Store, error) { return file.Open(dir) })
}

// A journal written before artifact.Reasoning had ContentField holds Kimi's
// reasoning under the field "reasoning_content,reasoning_details". It loads
// into one name each, and the thread goes on from there.
func TestOldReasoningForm(t *testing.T) {
	dir := t.TempDir()
	s, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Create(context.Background(), ledger.WithID("k"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ledger.RoleUser, ledgertest.Text("q")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	old := `{"t":"turn","n":2,"turn":{"role":"assistant","artifacts":[{"kind":"reasoning","content":"Plan.",` +
		`"field":"reasoning_content,reasoning_details","data":"[{\"type\":\"reasoning.text\",\"text\":\"Plan.\"}]"},` +
		`{"kind":"tool_call","id":"call_1","name":"look","arguments":"{}"}]}}`
	f, err := os.OpenFile(filepath.Join(dir, "k.journal"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(frameLine(old)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	want := []artifact.Artifact{
		artifact.Reasoning{Content: "Plan.", Field: "reasoning_details", ContentField: "reasoning_content", Data: `[{"type":"reasoning.text","text":"Plan."}]`},
		artifact.ToolCall{ID: "call_1", Name: "look", Arguments: "{}"},
	}
	s2, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	st = ledgertest.Load(t, s2, "k")
	if turns := st.Turns(); len(turns) != 2 || !reflect.DeepEqual([]artifact.Artifact(turns[1].Artifacts), want) {
		t.Fatalf("loaded %#v\nwant turn 2 to hold %#v", turns, want)
	}
	ledgertest.Append(t, st, ledger.RoleTool, artifact.ToolResult{ToolCallID: "call_1", Name: "look", Content: "seen"})
	again := ledgertest.Load(t, s2, "k")
	if turns := again.Turns(); len(turns) != 3 || !reflect.DeepEqual([]artifact.Artifact(turns[1].Artifacts), want) {
		t.Fatalf("after an append, loaded %#v", turns)
	}
}

func TestForkCrash(t *testing.T) {
	ledgertest.ForkCrash(t, "TestForkCrash", func(t testing.TB) string { return t.TempDir() },
		func(dir string) (ledger.Store, error) { return file.Open(dir) })
}

// turnJSON returns the turn JSON of each turn record in the journal at
// path, and their record numbers.
func turnJSON(t *testing.T, path string) ([]string, []int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var turns []string
	var ns []int
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var r struct {
			T    string          `json:"t"`
			N    int             `json:"n"`
			Turn json.RawMessage `json:"turn"`
		}
		if err := json.Unmarshal([]byte(line[18:]), &r); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if r.T == "turn" {
			turns = append(turns, string(r.Turn))
			ns = append(ns, r.N)
		}
	}
	return turns, ns
}

// A fork's journal holds the parent's turn records up to the cut, with
// each turn's JSON as the parent's journal has it and numbered from 1, the
// parent's metadata records left out; a turn record of another layout is
// written in the usual one.
func TestForkCopiesTheTurnRecords(t *testing.T) {
	dir := t.TempDir()
	s, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Create(context.Background(), ledger.WithID("p"))
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.Append(t, st, ledger.RoleUser, ledgertest.Text("q"))
	if err := st.SetMetadata("k", "v"); err != nil {
		t.Fatal(err)
	}
	ledgertest.Append(t, st, ledger.RoleAssistant, artifact.Text{Content: "a"}, artifact.Usage{InputTokens: 3})
	s.Close()
	other := `{"n":4,"turn":{"artifacts":[{"content":"again","kind":"text"}],"role":"user"},"t":"turn"}`
	f, err := os.OpenFile(filepath.Join(dir, "p.journal"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(frameLine(other)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	fork, err := ledger.Fork(context.Background(), s2, "p", 3, ledger.WithForkID("f"))
	if err != nil {
		t.Fatal(err)
	}
	fork.Close()
	parent, pn := turnJSON(t, filepath.Join(dir, "p.journal"))
	got, gn := turnJSON(t, filepath.Join(dir, "f.journal"))
	if !reflect.DeepEqual(pn, []int{1, 3, 4}) || !reflect.DeepEqual(gn, []int{1, 2, 3}) {
		t.Fatalf("record numbers: parent %v, fork %v", pn, gn)
	}
	want := []string{parent[0], parent[1], `{"role":"user","artifacts":[{"kind":"text","content":"again"}]}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the fork's turns:\n got %q\nwant %q", got, want)
	}
	ledgertest.SameJSON(t, "the fork reloaded", ledgertest.Load(t, s2, "f").Turns(), ledgertest.Load(t, s2, "p").Turns())
}
