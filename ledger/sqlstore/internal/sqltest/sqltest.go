// Package sqltest holds the tests every dialect of ledger/sqlstore passes
// beyond the store contract: schema migration, damaged rows, a database
// that goes away.
package sqltest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/sqlstore"
)

// Backend is one fresh, empty database.
type Backend struct {
	// Open returns a new Store instance over the database; the test
	// closes it.
	Open func(t testing.TB) *sqlstore.Store
	// Dial opens a new Store over a handle of its own, as another process
	// would, and reports a failure rather than failing the test, so that
	// it may run off the test goroutine; the test closes the Store.
	Dial func(ctx context.Context) (*sqlstore.Store, error)
	// Raw is a separate handle on the database, for tampering.
	Raw *sql.DB
	// Dialect is the database's dialect.
	Dialect sqlstore.Dialect
}

// Run runs the tests; newBackend is called once per subtest.
func Run(t *testing.T, newBackend func(t testing.TB) Backend) {
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"SchemaCreatedOnce", testSchema},
		{"SchemaFromTheFuture", testFutureSchema},
		{"ConcurrentOpen", testConcurrentOpen},
		{"ConcurrentAppends", testConcurrentAppends},
		{"DamagedTurnRow", testDamagedTurn},
		{"MissingTurnRow", testMissingTurn},
		{"MissingLastTurnRow", testMissingLastTurn},
		{"ExtraTurnRow", testExtraTurn},
		{"RenumberedTurnRow", testRenumberedTurn},
		{"OldReasoningForm", testOldReasoningForm},
		{"DatabaseClosedUnderneath", testDBClosed},
		{"OpensASchema2Database", testSchema2},
		{"ForkSharesTheRows", testForkShares},
		{"DeleteKeepsTheForks", testDeleteKeepsForks},
		{"ForkWithADamagedBase", testMissingBase},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newBackend(t)) })
	}
}

func q(b Backend, s string) string {
	if b.Dialect != sqlstore.Postgres {
		return s
	}
	n := 0
	var out strings.Builder
	for _, c := range s {
		if c == '?' {
			n++
			out.WriteString("$")
			out.WriteByte(byte('0' + n))
			continue
		}
		out.WriteRune(c)
	}
	return out.String()
}

func schemaVersion(t *testing.T, b Backend) int {
	t.Helper()
	var v, n int
	if err := b.Raw.QueryRow(`SELECT COUNT(*), MAX(version) FROM lode_schema`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("lode_schema has %d rows", n)
	}
	return v
}

func testSchema(t *testing.T, b Backend) {
	s := b.Open(t)
	st, err := s.Create(context.Background(), ledger.WithID("kept"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "x"}); err != nil {
		t.Fatal(err)
	}
	if v := schemaVersion(t, b); v != sqlstore.SchemaVersion {
		t.Fatalf("schema version %d, want %d", v, sqlstore.SchemaVersion)
	}
	again := b.Open(t) // migrating an up-to-date schema changes nothing
	if v := schemaVersion(t, b); v != sqlstore.SchemaVersion {
		t.Fatalf("schema version %d after reopening", v)
	}
	got, err := again.Load(context.Background(), "kept")
	if err != nil || got.Len() != 1 {
		t.Fatalf("after reopening: %v", err)
	}
}

func testFutureSchema(t *testing.T, b Backend) {
	b.Open(t)
	if _, err := b.Raw.Exec(`UPDATE lode_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	_, err := sqlstore.Open(context.Background(), b.Raw, b.Dialect)
	want := fmt.Sprintf("schema version 99, newer than the %d this version of lode knows: upgrade lode", sqlstore.SchemaVersion)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("open: %v", err)
	}
}

// Handles opening one new database at the same moment all succeed, the
// schema is made once, and each can write. Failures are collected and
// reported from the test goroutine.
func testConcurrentOpen(t *testing.T, b Backend) {
	ctx := context.Background()
	const handles = 8
	stores := make([]*sqlstore.Store, handles)
	errs := make([]error, handles)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range handles {
		wg.Go(func() {
			<-start
			if stores[i], errs[i] = b.Dial(ctx); errs[i] != nil {
				return
			}
			var st *ledger.StoredThread
			if st, errs[i] = stores[i].Create(ctx, ledger.WithID(fmt.Sprint("t", i))); errs[i] == nil {
				errs[i] = st.Append(ledger.RoleUser, artifact.Text{Content: "x"})
			}
		})
	}
	close(start)
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent opens: %v", err)
	}
	if v := schemaVersion(t, b); v != sqlstore.SchemaVersion {
		t.Fatalf("schema version %d", v)
	}
	n := 0
	for info, err := range stores[0].List(ctx) {
		if err != nil || info.Turns != 1 {
			t.Fatalf("list %+v: %v", info, err)
		}
		n++
	}
	if n != handles {
		t.Fatalf("listed %d threads, want %d", n, handles)
	}
}

// damaged makes thread d of three turns, tampers with its rows, and checks
// that Load and Reload refuse it with ErrCorrupt saying want, and that List
// yields it with the error listWant ("" when List does not look that deep)
// between the healthy threads c and e.
func damaged(t *testing.T, b Backend, tamper string, args []any, listWant string, want ...string) {
	t.Helper()
	s := b.Open(t)
	for _, id := range []string{"c", "e"} {
		st, err := s.Create(context.Background(), ledger.WithID(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Append(ledger.RoleUser, artifact.Text{Content: id}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Create(context.Background(), ledger.WithID("d"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"a", "b", "c"} {
		if err := st.Append(ledger.RoleUser, artifact.Text{Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Raw.Exec(q(b, tamper), args...); err != nil {
		t.Fatal(err)
	}
	_, err = s.Load(context.Background(), "d")
	if !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("load: %v, want ErrCorrupt", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not say %q", err, w)
		}
	}
	if err := st.Reload(context.Background()); !errors.Is(err, ledger.ErrCorrupt) || st.Len() != 3 {
		t.Fatalf("reload: %v; %d turns in memory", err, st.Len())
	}
	var listed []string
	for info, err := range b.Open(t).List(context.Background()) {
		switch {
		case info.ID == "d" && listWant != "":
			if !errors.Is(err, ledger.ErrCorrupt) || err.Error() != listWant {
				t.Fatalf("list d: %v\nwant %s", err, listWant)
			}
			listed = append(listed, "d!")
		case err != nil:
			t.Fatalf("list %s: %v", info.ID, err)
		default:
			listed = append(listed, info.ID)
		}
	}
	wantListed := "c,d!,e"
	if listWant == "" {
		wantListed = "c,d,e"
	}
	if strings.Join(listed, ",") != wantListed {
		t.Fatalf("listed %v, want %s", listed, wantListed)
	}
}

// List counts rows, it does not decode them: a turn that does not decode
// is Load's to report.
func testDamagedTurn(t *testing.T, b Backend) {
	damaged(t, b, `UPDATE lode_turns SET turn = ? WHERE thread_id = 'd' AND seq = 1`, []any{`{"role":"user","artifacts":[{"content":"no kind"}]}`},
		"", "load d", "turn 1 does not decode", `no "kind"`)
}

// oldReasoningTurn is an assistant turn as stores hold it from before
// artifact.Reasoning had ContentField: Kimi's reasoning under the field
// "reasoning_content,reasoning_details"; oldReasoningArtifacts is what it
// loads as.
const oldReasoningTurn = `{"role":"assistant","artifacts":[{"kind":"reasoning","content":"Plan.",` +
	`"field":"reasoning_content,reasoning_details","data":"[{\"type\":\"reasoning.text\",\"text\":\"Plan.\"}]"},` +
	`{"kind":"tool_call","id":"call_1","name":"look","arguments":"{}"}]}`

var oldReasoningArtifacts = []artifact.Artifact{
	artifact.Reasoning{Content: "Plan.", Field: "reasoning_details", ContentField: "reasoning_content", Data: `[{"type":"reasoning.text","text":"Plan."}]`},
	artifact.ToolCall{ID: "call_1", Name: "look", Arguments: "{}"},
}

// A row written before ContentField loads into the shape of today.
func testOldReasoningForm(t *testing.T, b Backend) {
	s := b.Open(t)
	st, err := s.Create(context.Background(), ledger.WithID("k"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "q"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ledger.RoleAssistant, artifact.Text{Content: "overwritten below"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Raw.Exec(q(b, `UPDATE lode_turns SET turn = ? WHERE thread_id = 'k' AND seq = 1`), oldReasoningTurn); err != nil {
		t.Fatal(err)
	}
	got, err := b.Open(t).Load(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	turns := got.Turns()
	if len(turns) != 2 || !reflect.DeepEqual([]artifact.Artifact(turns[1].Artifacts), oldReasoningArtifacts) {
		t.Fatalf("loaded %#v\nwant turn 2 to hold %#v", turns, oldReasoningArtifacts)
	}
}

func testMissingTurn(t *testing.T, b Backend) {
	damaged(t, b, `DELETE FROM lode_turns WHERE thread_id = 'd' AND seq = ?`, []any{1},
		"sqlstore: list d: the thread records 3 turns but 2 turn rows are stored, numbered 0 to 2: ledger: corrupt",
		"sqlstore: load d: turn 1 missing (found 2 next): ledger: corrupt")
}

func testMissingLastTurn(t *testing.T, b Backend) {
	damaged(t, b, `DELETE FROM lode_turns WHERE thread_id = 'd' AND seq = ?`, []any{2},
		"sqlstore: list d: the thread records 3 turns but 2 turn rows are stored, numbered 0 to 1: ledger: corrupt",
		"sqlstore: load d: turn 2 missing (the thread records 3 turns): ledger: corrupt")
}

func testExtraTurn(t *testing.T, b Backend) {
	damaged(t, b, `INSERT INTO lode_turns (thread_id, seq, role, turn) VALUES ('d', ?, 'user', ?)`, []any{3, `{"role":"user","artifacts":[]}`},
		"sqlstore: list d: the thread records 3 turns but 4 turn rows are stored, numbered 0 to 3: ledger: corrupt",
		"sqlstore: load d: turn 3 is stored but the thread records 3 turns: ledger: corrupt")
}

func testRenumberedTurn(t *testing.T, b Backend) {
	damaged(t, b, `UPDATE lode_turns SET seq = ? WHERE thread_id = 'd' AND seq = 2`, []any{7},
		"sqlstore: list d: the thread records 3 turns but 3 turn rows are stored, numbered 0 to 7: ledger: corrupt",
		"sqlstore: load d: turn 2 missing (found 7 next): ledger: corrupt")
}

func testDBClosed(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.Open(t)
	st, err := s.Create(ctx, ledger.WithID("gone"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ledger.RoleUser, artifact.Text{Content: "kept"}); err != nil {
		t.Fatal(err)
	}
	s.DB().Close()
	err = st.Append(ledger.RoleUser, artifact.Text{Content: "lost"})
	if err == nil || !strings.Contains(err.Error(), "sql: database is closed") || !strings.Contains(err.Error(), "append turn 1 to thread gone") {
		t.Fatalf("append: %v", err)
	}
	if err := st.SetMetadata("k", "v"); err == nil || !strings.Contains(err.Error(), "database is closed") {
		t.Fatalf("set metadata: %v", err)
	}
	if st.Len() != 1 {
		t.Fatalf("%d turns in memory", st.Len())
	}
	got, err := b.Open(t).Load(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != 1 || got.Turns()[0].Artifacts[0] != (artifact.Text{Content: "kept"}) {
		t.Fatalf("stored %d turns", got.Len())
	}
	if _, ok := got.Metadata("k"); ok {
		t.Fatal("a failed metadata change was stored")
	}
}

// schema2 is the schema of SchemaVersion 2, with one thread of two turns
// and a metadata value, as a database made before forks shared turns.
var schema2 = []string{
	`CREATE TABLE lode_schema (version INTEGER NOT NULL)`,
	`INSERT INTO lode_schema (version) VALUES (2)`,
	`CREATE TABLE lode_threads (id TEXT PRIMARY KEY, incarnation TEXT NOT NULL, version BIGINT NOT NULL, turns BIGINT NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)`,
	`CREATE TABLE lode_turns (thread_id TEXT NOT NULL, seq BIGINT NOT NULL, role TEXT NOT NULL, turn TEXT NOT NULL, PRIMARY KEY (thread_id, seq))`,
	`CREATE TABLE lode_metadata (thread_id TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (thread_id, name))`,
	`CREATE TABLE lode_counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL)`,
	`INSERT INTO lode_threads VALUES ('old', 'inc1', 3, 2, 1, 2)`,
	`INSERT INTO lode_turns VALUES ('old', 0, 'user', '{"role":"user","artifacts":[{"kind":"text","content":"q"}]}')`,
	`INSERT INTO lode_turns VALUES ('old', 1, 'assistant', '{"role":"assistant","artifacts":[{"kind":"text","content":"a"}]}')`,
	`INSERT INTO lode_metadata VALUES ('old', 'tenant', 'acme')`,
}

// A database of the previous schema opens, is migrated once, and its
// threads load, take appends, fork and are deleted as new ones are.
func testSchema2(t *testing.T, b Backend) {
	ctx := context.Background()
	for _, stmt := range schema2 {
		if _, err := b.Raw.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	s := b.Open(t)
	if v := schemaVersion(t, b); v != sqlstore.SchemaVersion {
		t.Fatalf("schema version %d after opening, want %d", v, sqlstore.SchemaVersion)
	}
	old, err := s.Load(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.Turn{
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: "q"}}},
		{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{artifact.Text{Content: "a"}}},
	}
	if !reflect.DeepEqual(old.Turns(), want) || old.Version() != 3 || old.AllMetadata()["tenant"] != "acme" {
		t.Fatalf("the old thread loads as %+v, version %d, %v", old.Turns(), old.Version(), old.AllMetadata())
	}
	if err := old.Append(ledger.RoleUser, artifact.Text{Content: "q2"}); err != nil {
		t.Fatal(err)
	}
	f, err := ledger.Fork(ctx, s, "old", 2, ledger.WithForkID("f"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Turns(), want) {
		t.Fatalf("fork of the old thread: %+v", f.Turns())
	}
	if err := s.Delete(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	again, err := b.Open(t).Load(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Turns(), want) {
		t.Fatalf("the fork after its parent's delete: %+v", again.Turns())
	}
}

// sameJSON reports whether a and b encode to the same JSON, turn by turn.
func sameJSON(a, b []ledger.Turn) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, err1 := a[i].MarshalJSON()
		y, err2 := b[i].MarshalJSON()
		if err1 != nil || err2 != nil || string(x) != string(y) {
			return false
		}
	}
	return true
}

// turnRows returns how many turn rows the thread id has.
func turnRows(t *testing.T, b Backend, id string) int {
	t.Helper()
	var n int
	if err := b.Raw.QueryRow(q(b, `SELECT COUNT(*) FROM lode_turns WHERE thread_id = ?`), id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func seedThread(t *testing.T, s *sqlstore.Store, id string, n int) *ledger.StoredThread {
	t.Helper()
	turns := make([]ledger.Turn, n)
	for i := range turns {
		turns[i] = ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{artifact.Text{Content: fmt.Sprintf("%s %d", id, i)}}}
	}
	st, err := s.Create(context.Background(), ledger.WithID(id), ledger.WithTurns(turns...))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func fork(t *testing.T, s *sqlstore.Store, parent string, at int, id string) *ledger.StoredThread {
	t.Helper()
	f, err := ledger.Fork(context.Background(), s, parent, at, ledger.WithForkID(id))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func loadTurns(t *testing.T, s *sqlstore.Store, id string) []ledger.Turn {
	t.Helper()
	st, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
	defer st.Close()
	return st.Turns()
}

// A fork writes no turn rows: its turns are its base chain's, and the
// rows it has are the turns appended to it. A fork of a fork at a point
// within the grandparent's turns reads them from the grandparent.
func testForkShares(t *testing.T, b Backend) {
	s := b.Open(t)
	p := seedThread(t, s, "p", 50)
	f := fork(t, s, "p", 40, "f")
	if n := turnRows(t, b, "f"); n != 0 {
		t.Fatalf("the fork has %d turn rows, want 0", n)
	}
	if err := f.Append(ledger.RoleUser, artifact.Text{Content: "f 40"}); err != nil {
		t.Fatal(err)
	}
	ff := fork(t, s, "f", 41, "ff")
	fg := fork(t, s, "f", 30, "fg")
	if n := turnRows(t, b, "f") + turnRows(t, b, "ff") + turnRows(t, b, "fg"); n != 1 {
		t.Fatalf("the forks have %d turn rows, want the 1 appended", n)
	}
	var base string
	var baseLen int
	if err := b.Raw.QueryRow(q(b, `SELECT base_id, base_len FROM lode_threads WHERE id = ?`), "fg").Scan(&base, &baseLen); err != nil {
		t.Fatal(err)
	}
	if base != "p" || baseLen != 30 {
		t.Fatalf("a fork of f at 30, within p's turns, has base %q at %d, want p at 30", base, baseLen)
	}
	o := b.Open(t)
	for _, c := range []struct {
		id   string
		want []ledger.Turn
	}{
		{"f", f.Turns()},
		{"ff", f.Turns()},
		{"fg", p.Turns()[:30]},
	} {
		if got := loadTurns(t, o, c.id); !sameJSON(got, c.want) {
			t.Fatalf("%s loads %d turns, want %d", c.id, len(got), len(c.want))
		}
	}
	if !sameJSON(ff.Turns(), f.Turns()) || !sameJSON(fg.Turns(), p.Turns()[:30]) {
		t.Fatal("the forks as returned differ from what they keep")
	}
}

// Deleting a thread that forks share copies what each reads into it and
// rebases it, down a chain; the forks load the same turns after, and
// nothing is left of the deleted threads.
func testDeleteKeepsForks(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.Open(t)
	p := seedThread(t, s, "p", 20)
	want := map[string][]ledger.Turn{}
	f := fork(t, s, "p", 10, "f")
	for i := range 5 {
		if err := f.Append(ledger.RoleAssistant, artifact.Text{Content: fmt.Sprintf("f %d", 10+i)}); err != nil {
			t.Fatal(err)
		}
	}
	fork(t, s, "p", 20, "whole")
	fork(t, s, "p", 0, "none")
	fork(t, s, "f", 12, "f12")
	fork(t, s, "f", 15, "f15")
	fork(t, s, "f", 4, "f4")
	want["p"] = p.Turns()
	want["f"] = f.Turns()
	want["whole"] = p.Turns()
	want["none"] = nil
	want["f12"] = f.Turns()[:12]
	want["f15"] = f.Turns()
	want["f4"] = p.Turns()[:4]
	check := func(when string) {
		t.Helper()
		o := b.Open(t)
		for id, w := range want {
			if got := loadTurns(t, o, id); !sameJSON(got, w) {
				t.Fatalf("%s: %s loads %d turns, want %d", when, id, len(got), len(w))
			}
		}
		for info, err := range o.List(ctx) {
			if err != nil {
				t.Fatalf("%s: list: %v", when, err)
			}
			if w, ok := want[info.ID]; !ok || info.Turns != len(w) {
				t.Fatalf("%s: listed %s with %d turns", when, info.ID, info.Turns)
			}
		}
	}
	check("before")
	if err := s.Delete(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	delete(want, "f")
	check("after deleting f")
	if err := s.Delete(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	delete(want, "p")
	check("after deleting p")
	if n := turnRows(t, b, "p") + turnRows(t, b, "f"); n != 0 {
		t.Fatalf("%d turn rows of the deleted threads are left", n)
	}
	// The ID of a deleted parent is free again, and its forks are not
	// the new thread's.
	want["p"] = seedThread(t, s, "p", 3).Turns()
	check("after making p again")
}

// A fork whose base chain was changed behind the store's back is damage:
// Load says so rather than loading a shorter thread, or looping.
func testMissingBase(t *testing.T, b Backend) {
	for _, c := range []struct {
		name, damage, msg string
	}{
		{"missing", `DELETE FROM lode_threads WHERE id = 'p'`, "sqlstore: load f: thread f: base thread p is missing"},
		{"loop", `UPDATE lode_threads SET base_id = 'f', base_len = 1 WHERE id = 'p'`, "sqlstore: load f: thread f: its base chain comes back to f"},
		{"shorter", `UPDATE lode_threads SET turns = 3 WHERE id = 'p'`, "sqlstore: load f: thread f: base thread p has 3 turns from 0, not the 5 it shares"},
		{"no base", `UPDATE lode_threads SET base_id = '' WHERE id = 'f'`, `sqlstore: load f: thread f records 6 turns and a base "" of 5`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := b.Open(t)
			for _, stmt := range []string{`DELETE FROM lode_threads`, `DELETE FROM lode_turns`, `DELETE FROM lode_metadata`} {
				if _, err := b.Raw.Exec(stmt); err != nil {
					t.Fatal(err)
				}
			}
			seedThread(t, s, "p", 5)
			if err := fork(t, s, "p", 5, "f").Append(ledger.RoleUser, artifact.Text{Content: "own"}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Raw.Exec(c.damage); err != nil {
				t.Fatal(err)
			}
			_, err := b.Open(t).Load(context.Background(), "f")
			if !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("load: %v, want ErrCorrupt saying %q", err, c.msg)
			}
		})
	}
}
