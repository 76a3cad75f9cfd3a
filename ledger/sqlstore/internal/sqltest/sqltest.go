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
		{"DamagedTurnRow", testDamagedTurn},
		{"MissingTurnRow", testMissingTurn},
		{"MissingLastTurnRow", testMissingLastTurn},
		{"ExtraTurnRow", testExtraTurn},
		{"RenumberedTurnRow", testRenumberedTurn},
		{"OldReasoningForm", testOldReasoningForm},
		{"DatabaseClosedUnderneath", testDBClosed},
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
	if err == nil || !strings.Contains(err.Error(), "schema version 99, newer than the 2 this version of lode knows: upgrade lode") {
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
