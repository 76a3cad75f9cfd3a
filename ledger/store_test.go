package ledger_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// memJournal is a fake Journal: an in-memory log with a version check and
// an injectable failure.
type memJournal struct {
	mu      sync.Mutex
	snap    ledger.Snapshot
	fail    error // returned by the next Commit, then cleared
	commits []ledger.Record
	closed  bool
}

func (m *memJournal) Commit(_ context.Context, r ledger.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ledger.ErrClosed
	}
	if err := m.fail; err != nil {
		m.fail = nil
		return err
	}
	if r.Version != m.snap.Version+1 {
		return ledger.ErrConflict
	}
	if r.Turn != nil {
		if r.Index != len(m.snap.Turns) {
			return errors.New("bad index")
		}
		m.snap.Turns = append(m.snap.Turns, *r.Turn)
	} else {
		if m.snap.Metadata == nil {
			m.snap.Metadata = map[string]string{}
		}
		m.snap.Metadata[r.Key] = r.Value
	}
	m.snap.Version = r.Version
	m.commits = append(m.commits, r)
	return nil
}

func (m *memJournal) Read(ctx context.Context) (ledger.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return ledger.Snapshot{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := ledger.Snapshot{Version: m.snap.Version, Turns: append([]ledger.Turn(nil), m.snap.Turns...), Metadata: map[string]string{}}
	for k, v := range m.snap.Metadata {
		s.Metadata[k] = v
	}
	return s, nil
}

func (m *memJournal) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

func fixed() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }

func TestStoredThreadAppendCommitsThenPublishes(t *testing.T) {
	j := &memJournal{}
	st := ledger.NewStoredThread("t1", ledger.Snapshot{}, j, fixed)
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetMetadata("k", "v"); err != nil {
		t.Fatal(err)
	}
	if got := st.Version(); got != 2 {
		t.Fatalf("version %d, want 2", got)
	}
	if len(j.commits) != 2 || j.commits[0].Turn == nil || j.commits[0].Index != 0 || j.commits[1].Key != "k" {
		t.Fatalf("commits %+v", j.commits)
	}
	turns := st.Turns()
	if len(turns) != 1 || !turns[0].Time.Equal(fixed()) || turns[0].Role != ledger.RoleUser {
		t.Fatalf("turns %+v", turns)
	}
	if v, ok := st.Metadata("k"); !ok || v != "v" {
		t.Fatalf("metadata %q %v", v, ok)
	}
}

func TestStoredThreadFailedChangesLeaveStateAsItWas(t *testing.T) {
	boom := errors.New("disk on fire")
	cases := []struct {
		name   string
		change func(st *ledger.StoredThread) error
		want   error
		inMsg  string
	}{
		{"append store error", func(st *ledger.StoredThread) error {
			return st.Append(ledger.RoleAssistant, artifact.Text{Content: "lost"})
		}, boom, "append turn 1 to thread t1: disk on fire"},
		{"append conflict", func(st *ledger.StoredThread) error {
			return st.Append(ledger.RoleAssistant, artifact.Text{Content: "lost"})
		}, ledger.ErrConflict, "append turn 1 to thread t1"},
		{"metadata store error", func(st *ledger.StoredThread) error {
			return st.SetMetadata("k", "new")
		}, boom, `set metadata "k" on thread t1: disk on fire`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := &memJournal{}
			st := ledger.NewStoredThread("t1", ledger.Snapshot{}, j, nil)
			if err := st.Append(ledger.RoleUser, artifact.Text{Content: "kept"}); err != nil {
				t.Fatal(err)
			}
			if err := st.SetMetadata("k", "old"); err != nil {
				t.Fatal(err)
			}
			before := st.Turns()
			if c.want == ledger.ErrConflict {
				j.snap.Version++ // another writer
			} else {
				j.fail = c.want
			}
			err := c.change(st)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.inMsg) {
				t.Fatalf("err %v, want %v containing %q", err, c.want, c.inMsg)
			}
			if got := st.Turns(); len(got) != len(before) {
				t.Fatalf("in-memory history changed: %d turns, want %d", len(got), len(before))
			}
			if v, _ := st.Metadata("k"); v != "old" {
				t.Fatalf("metadata %q, want old", v)
			}
			if st.Version() != 2 {
				t.Fatalf("version %d, want 2", st.Version())
			}
		})
	}
}

func TestStoredThreadRejectsInvalidRole(t *testing.T) {
	j := &memJournal{}
	st := ledger.NewStoredThread("t1", ledger.Snapshot{}, j, nil)
	err := st.Append("robot", artifact.Text{Content: "x"})
	if err == nil || !strings.Contains(err.Error(), `invalid role "robot"`) {
		t.Fatalf("err %v", err)
	}
	if len(j.commits) != 0 || st.Len() != 0 {
		t.Fatal("an invalid turn reached the journal")
	}
}

func TestStoredThreadSameMetadataWritesNothing(t *testing.T) {
	j := &memJournal{}
	st := ledger.NewStoredThread("t1", ledger.Snapshot{Metadata: map[string]string{"k": "v"}}, j, nil)
	if err := st.SetMetadata("k", "v"); err != nil {
		t.Fatal(err)
	}
	if len(j.commits) != 0 {
		t.Fatalf("commits %v", j.commits)
	}
	if err := st.SetMetadata("empty", ""); err != nil {
		t.Fatal(err)
	}
	if v, ok := st.Metadata("empty"); !ok || v != "" || len(j.commits) != 1 {
		t.Fatalf("empty value: %q %v, commits %d", v, ok, len(j.commits))
	}
}

func TestStoredThreadReloadAfterConflict(t *testing.T) {
	j := &memJournal{}
	a := ledger.NewStoredThread("t1", ledger.Snapshot{}, j, nil)
	snap, _ := j.Read(context.Background())
	b := ledger.NewStoredThread("t1", snap, j, nil)
	if err := a.Append(ledger.RoleUser, artifact.Text{Content: "from a"}); err != nil {
		t.Fatal(err)
	}
	old := b.Turns()
	if err := b.Append(ledger.RoleUser, artifact.Text{Content: "from b"}); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("err %v, want ErrConflict", err)
	}
	if err := b.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ledger.RoleUser, artifact.Text{Content: "from b"}); err != nil {
		t.Fatal(err)
	}
	if len(old) != 0 {
		t.Fatal("a snapshot taken before Reload changed")
	}
	got := b.Turns()
	if len(got) != 2 || got[0].Artifacts[0].(artifact.Text).Content != "from a" || got[1].Artifacts[0].(artifact.Text).Content != "from b" {
		t.Fatalf("turns %+v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Reload(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("reload with cancelled ctx: %v", err)
	}
	if b.Len() != 2 {
		t.Fatal("failed reload changed the state")
	}
}

func TestStoredThreadClose(t *testing.T) {
	j := &memJournal{}
	st := ledger.NewStoredThread("t1", ledger.Snapshot{Turns: []ledger.Turn{{Role: ledger.RoleUser}}}, j, nil)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	for name, err := range map[string]error{
		"append":   st.Append(ledger.RoleUser),
		"metadata": st.SetMetadata("k", "v"),
		"reload":   st.Reload(context.Background()),
	} {
		if !errors.Is(err, ledger.ErrClosed) {
			t.Errorf("%s after close: %v, want ErrClosed", name, err)
		}
	}
	if st.Len() != 1 || !j.closed {
		t.Fatal("history lost or journal left open")
	}
}

func TestStoredThreadSnapshotsAndConcurrentReaders(t *testing.T) {
	st := ledger.NewStoredThread("t1", ledger.Snapshot{}, &memJournal{}, nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ts := st.Turns()
				for i, tu := range ts {
					if tu.Artifacts[0].(artifact.Text).Content != string(rune('a'+i%26)) {
						t.Errorf("turn %d corrupted", i)
						return
					}
				}
				st.Metadata("n")
			}
		})
	}
	first := st.Turns()
	for i := range 200 {
		if err := st.Append(ledger.RoleUser, artifact.Text{Content: string(rune('a' + i%26))}); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			if err := st.SetMetadata("n", string(rune('0'+i/50))); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	if len(first) != 0 || st.Len() != 200 {
		t.Fatalf("snapshot %d, len %d", len(first), st.Len())
	}
}

func TestCheckID(t *testing.T) {
	long := strings.Repeat("a", ledger.MaxIDLen)
	for _, id := range []string{"a", "thread-1", "A_b.c", long, ledger.NewID()} {
		if err := ledger.CheckID(id); err != nil {
			t.Errorf("CheckID(%q): %v", id, err)
		}
	}
	for _, c := range []struct{ id, msg string }{
		{"", `invalid thread id ""`},
		{long + "a", "want 1 to 128"},
		{".hidden", "not starting with '.'"},
		{"..", "not starting with '.'"},
		{"a/b", `byte 1 ('/')`},
		{"a b", `byte 1 (' ')`},
		{"é", `byte 0`},
		{"a\x00", `byte 1`},
	} {
		err := ledger.CheckID(c.id)
		if !errors.Is(err, ledger.ErrInvalidID) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("CheckID(%q) = %v, want ErrInvalidID containing %q", c.id, err, c.msg)
		}
	}
}

// Importing the ledger or its file store must not compile a database
// driver; only the sqlstore subpackages that name one do.
func TestHeavyDependenciesStayInSubpackages(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	cases := []struct {
		pkg       string
		forbidden []string
	}{
		{"github.com/lodeworks/lode/ledger", []string{"modernc.org/sqlite", "github.com/jackc/pgx"}},
		{"github.com/lodeworks/lode/ledger/file", []string{"modernc.org/sqlite", "github.com/jackc/pgx"}},
		{"github.com/lodeworks/lode/ledger/sqlstore", []string{"modernc.org/sqlite", "github.com/jackc/pgx"}},
		{"github.com/lodeworks/lode/ledger/sqlstore/sqlite", []string{"github.com/jackc/pgx"}},
		{"github.com/lodeworks/lode/ledger/sqlstore/postgres", []string{"modernc.org/sqlite"}},
	}
	for _, c := range cases {
		out, err := exec.Command(goBin, "list", "-deps", c.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", c.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range c.forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s compiles %s", c.pkg, dep)
				}
			}
		}
	}
}

func TestStoredThreadAppendAt(t *testing.T) {
	j := &memJournal{}
	st := ledger.NewStoredThread("t1", ledger.Snapshot{}, j, fixed)
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	seen := st.Version()
	if err := st.AppendAt(seen, ledger.RoleTool, artifact.Text{Content: "claim"}); err != nil {
		t.Fatalf("append at the current version: %v", err)
	}
	cases := []struct {
		name    string
		version int64
		want    string
	}{
		{"stale", seen, "ledger: append turn 2 to thread t1: it is at version 2, not 1: conflict"},
		{"ahead", seen + 5, "ledger: append turn 2 to thread t1: it is at version 2, not 6: conflict"},
		{"negative", -1, "ledger: append to thread t1 at version -1: conflict"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := st.AppendAt(c.version, ledger.RoleTool, artifact.Text{Content: "late"})
			if !errors.Is(err, ledger.ErrConflict) || err.Error() != c.want {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if st.Len() != 2 || len(j.commits) != 2 {
				t.Fatalf("a refused append changed the thread: %d turns, %d commits", st.Len(), len(j.commits))
			}
		})
	}
}
