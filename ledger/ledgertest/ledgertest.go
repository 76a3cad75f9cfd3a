package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// Opener opens a new Store over one storage. Each call is an independent
// instance, as another process would have; the Opener closes it when the
// test ends.
type Opener func(t testing.TB) ledger.Store

// Run runs the contract as subtests of t: the Store methods, each
// StoredThread change, the records an approval writes, and leases.
// newStorage returns an Opener over fresh, empty storage; it is called once
// per subtest.
func Run(t *testing.T, newStorage func(t testing.TB) Opener) {
	RunChecks(t, newStorage, contract...)
}

// Check is one named check of a store, run on fresh storage.
type Check struct {
	Name string
	Fn   func(t *testing.T, open Opener)
}

// RunChecks runs each check as a subtest of t, over an Opener that
// newStorage returns for it; a store's own checks run the way Run runs
// the contract.
func RunChecks(t *testing.T, newStorage func(t testing.TB) Opener, checks ...Check) {
	for _, c := range checks {
		t.Run(c.Name, func(t *testing.T) { c.Fn(t, newStorage(t)) })
	}
}

var contract = []Check{
	{"CreateAndLoad", testCreateAndLoad},
	{"CreateWithTurns", testCreateWithTurns},
	{"AppendIsDurableOnReturn", testAppendDurable},
	{"RoundTripEveryKind", testRoundTrip},
	{"Metadata", testMetadata},
	{"List", testList},
	{"Delete", testDelete},
	{"NotFound", testNotFound},
	{"InvalidID", testInvalidID},
	{"CreateTakenID", testCreateTaken},
	{"Conflict", testConflict},
	{"ConcurrentWriters", testConcurrentWriters},
	{"BadTurnsPersistNothing", testBadTurns},
	{"ClosedStore", testClosedStore},
	{"ClosedThread", testClosedThread},
	{"CancelledContext", testCancelled},
	{"RunPersistsEachTurn", testRunRecords},
	{"InterruptedCallIsAnswered", testRepairRecords},
	{"ApprovalRecords", testApprovalRecords},
	{"DecisionsAreClaimedOnce", testConcurrentResumers},
	{"ClaimUnderLease", testClaimUnderLease},
	{"LeaseAcquire", testLeaseAcquire},
	{"LeaseLiveIsRefused", testLeaseLive},
	{"LeaseExpiredIsTakenOver", testLeaseTakeover},
	{"LeaseRace", testLeaseRace},
	{"LeaseRenewRelease", testLeaseRenewRelease},
	{"LeaseBadInput", testLeaseBadInput},
	{"ForkKeepsTheTurnsBeforeTheCut", testForkKeeps},
	{"ForkAtTheEndsAndForkOfAFork", testForkEnds},
	{"ForkRefusesABadCut", testForkRefuses},
	{"ForkReloadsAsItsParentAtTheCut", testForkReloads},
	{"ForkAndParentGrowApart", testForkGrowsApart},
	{"ForkOfAForkOfAFork", testForkChain},
	{"DeleteParentKeepsItsForks", testForkDeleteParent},
	{"ForkWhileTheParentGrows", testForkWhileAppending},
	{"ForkWhileTheParentIsDeleted", testForkWhileDeleting},
}

// Text returns a Text artifact; a shorthand for tests.
func Text(s string) artifact.Artifact { return artifact.Text{Content: s} }

// EveryKind is one artifact of each storable kind, with awkward content:
// invalid tool-call JSON, bytes, unicode, a kind lode does not know, and
// an adapter's opaque JSON.
func EveryKind() []artifact.Artifact {
	return []artifact.Artifact{
		artifact.Text{Content: "héllo\n\"quoted\" \u2028 \x00 end"},
		artifact.Reasoning{Content: "thinking", Signature: "sig=="},
		artifact.ToolCall{ID: "c1", Name: "calc", Arguments: `{"a":1,`},
		artifact.ToolResult{ToolCallID: "c1", Name: "calc", Content: "2", IsError: true, Truncated: true, Full: "2 and more",
			Parts: artifact.List{artifact.Image{URL: "http://127.0.0.1/x.png"}}},
		artifact.Usage{InputTokens: 10, OutputTokens: 5, CachedInputTokens: 1, ReasoningTokens: 2},
		artifact.Image{MIMEType: "image/png", Data: []byte{0, 1, 2, 255}, Detail: "low"},
		artifact.Finish{Reason: "stop"},
		artifact.Summary{Content: "the user asked for a deploy", First: 2, Last: 41},
		artifact.Unknown{Type: "hologram", Raw: json.RawMessage(`{"kind":"hologram","beam":[1,2.5,{"x":"y"}],"z":null}`)},
		// An adapter's own JSON (Claude's code execution container), which
		// it reads back as the server sent it: spacing, order, <>&.
		artifact.Opaque{Provider: "anthropic", Type: "container", Data: `{"expires_at": "2025-05-23T21:13:31.749448Z" ,"id":"container_<0&1>"}`},
	}
}

// EqualTurns fails t unless got and want hold the same turns.
func EqualTurns(t testing.TB, got, want []ledger.Turn) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d turns, want %d:\n got %s\nwant %s", len(got), len(want), Show(got), Show(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Role != w.Role || !g.Time.Equal(w.Time) || !reflect.DeepEqual(normal(g.Artifacts), normal(w.Artifacts)) {
			t.Fatalf("turn %d differs:\n got %s\nwant %s", i, Show(got[i:i+1]), Show(want[i:i+1]))
		}
	}
}

// normal treats a nil and an empty artifact list alike.
func normal(a []artifact.Artifact) []artifact.Artifact {
	if len(a) == 0 {
		return nil
	}
	return a
}

// Show is the turns as JSON, for a test's failure message.
func Show(ts []ledger.Turn) string {
	b, err := json.Marshal(ts)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Load loads thread id from s, failing t otherwise; the thread is closed
// when the test ends.
func Load(t testing.TB, s ledger.Store, id string) *ledger.StoredThread {
	t.Helper()
	st, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Create creates a thread in s, failing t otherwise; the thread is closed
// when the test ends.
func Create(t testing.TB, s ledger.Store, opts ...ledger.ThreadOption) *ledger.StoredThread {
	t.Helper()
	st, err := s.Create(context.Background(), opts...)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Append appends one turn to st, failing t otherwise.
func Append(t testing.TB, st ledger.State, role ledger.Role, arts ...artifact.Artifact) {
	t.Helper()
	if err := st.Append(role, arts...); err != nil {
		t.Fatalf("append: %v", err)
	}
}

func wantErr(t testing.TB, what string, err, target error, inMsg ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
	for _, m := range inMsg {
		if !strings.Contains(err.Error(), m) {
			t.Fatalf("%s: error %q does not mention %q", what, err, m)
		}
	}
}

func testCreateAndLoad(t *testing.T, open Opener) {
	s := open(t)
	st := Create(t, s, ledger.WithID("alpha"), ledger.WithMetadata(map[string]string{"user": "ann", "": "empty key"}))
	if st.ID() != "alpha" || st.Len() != 0 {
		t.Fatalf("created %q with %d turns", st.ID(), st.Len())
	}
	if v, _ := st.Metadata("user"); v != "ann" {
		t.Fatalf("metadata user = %q", v)
	}
	other := Load(t, open(t), "alpha")
	if other.Len() != 0 || !reflect.DeepEqual(other.AllMetadata(), map[string]string{"user": "ann", "": "empty key"}) {
		t.Fatalf("loaded %d turns, metadata %v", other.Len(), other.AllMetadata())
	}
	random := Create(t, s)
	if err := ledger.CheckID(random.ID()); err != nil {
		t.Fatalf("random id: %v", err)
	}
	if got := Load(t, s, random.ID()); got.ID() != random.ID() {
		t.Fatalf("loaded %q", got.ID())
	}
}

func testCreateWithTurns(t *testing.T, open Opener) {
	s := open(t)
	seed := []ledger.Turn{
		{Role: ledger.RoleSystem, Artifacts: []artifact.Artifact{Text("be brief")}},
		{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{Text("hi")}},
	}
	st := Create(t, s, ledger.WithID("seeded"), ledger.WithTurns(seed...))
	EqualTurns(t, st.Turns(), seed)
	Append(t, st, ledger.RoleAssistant, Text("hello"))
	got := Load(t, open(t), "seeded").Turns()
	if len(got) != 3 {
		t.Fatalf("%d turns", len(got))
	}
	EqualTurns(t, got[:2], seed)
}

func testAppendDurable(t *testing.T, open Opener) {
	s := open(t)
	st := Create(t, s, ledger.WithID("durable"))
	other := open(t)
	for i := range 3 {
		Append(t, st, ledger.RoleUser, Text(fmt.Sprint("turn ", i)))
		// Nothing is closed or flushed: the other instance sees it at once.
		got := Load(t, other, "durable")
		EqualTurns(t, got.Turns(), st.Turns())
	}
}

func testRoundTrip(t *testing.T, open Opener) {
	s := open(t)
	st := Create(t, s, ledger.WithID("kinds"))
	arts := EveryKind()
	before := st.Turns()
	Append(t, st, ledger.RoleAssistant, arts...)
	Append(t, st, ledger.RoleTool)
	if len(before) != 0 {
		t.Fatal("a snapshot taken before Append changed")
	}
	got := Load(t, open(t), "kinds")
	EqualTurns(t, got.Turns(), st.Turns())
	if u, ok := got.Turns()[0].Artifacts[8].(artifact.Unknown); !ok || string(u.Raw) != string(arts[8].(artifact.Unknown).Raw) {
		t.Fatalf("unknown artifact came back as %#v", got.Turns()[0].Artifacts[8])
	}
	if o, ok := got.Turns()[0].Artifacts[9].(artifact.Opaque); !ok || o != arts[9] {
		t.Fatalf("opaque artifact came back as %#v", got.Turns()[0].Artifacts[9])
	}
	if got.Turns()[0].Time.IsZero() {
		t.Fatal("turn time was not kept")
	}
}

func testMetadata(t *testing.T, open Opener) {
	s := open(t)
	st := Create(t, s, ledger.WithID("meta"), ledger.WithMetadata(map[string]string{"role": "admin"}))
	for _, kv := range [][2]string{{"tenant", "ü-42"}, {"role", "viewer"}, {"blank", ""}, {"tenant", "43"}} {
		if err := st.SetMetadata(kv[0], kv[1]); err != nil {
			t.Fatalf("set %q: %v", kv[0], err)
		}
	}
	want := map[string]string{"role": "viewer", "tenant": "43", "blank": ""}
	if got := st.AllMetadata(); !reflect.DeepEqual(got, want) {
		t.Fatalf("in memory %v, want %v", got, want)
	}
	if got := Load(t, open(t), "meta").AllMetadata(); !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %v, want %v", got, want)
	}
}

func testList(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	for i, id := range []string{"c", "a", "b"} {
		st := Create(t, s, ledger.WithID(id), ledger.WithMetadata(map[string]string{"n": id}))
		for range i {
			Append(t, st, ledger.RoleUser, Text("x"))
		}
		if err := st.SetMetadata("set", "later"); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for info, err := range open(t).List(ctx) {
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		ids = append(ids, info.ID)
		wantTurns := map[string]int{"c": 0, "a": 1, "b": 2}[info.ID]
		if info.Turns != wantTurns || !reflect.DeepEqual(info.Metadata, map[string]string{"n": info.ID, "set": "later"}) {
			t.Fatalf("%s: %d turns (want %d), metadata %v", info.ID, info.Turns, wantTurns, info.Metadata)
		}
		if info.Created.IsZero() || info.Updated.IsZero() {
			t.Fatalf("%s: created %v, updated %v", info.ID, info.Created, info.Updated)
		}
	}
	if strings.Join(ids, ",") != "a,b,c" {
		t.Fatalf("listed %v, want a,b,c", ids)
	}
	n := 0
	for range s.List(ctx) {
		n++
		break
	}
	if n != 1 {
		t.Fatal("List went on after the loop broke")
	}
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	ids = nil
	for info, err := range s.List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	if strings.Join(ids, ",") != "a,c" {
		t.Fatalf("after delete listed %v", ids)
	}
}

func testDelete(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	st := Create(t, s, ledger.WithID("gone"))
	Append(t, st, ledger.RoleUser, Text("x"))
	stale := Load(t, open(t), "gone")
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Load(ctx, "gone")
	wantErr(t, "load deleted", err, ledger.ErrNotFound, "gone")
	wantErr(t, "delete twice", s.Delete(ctx, "gone"), ledger.ErrNotFound, "gone")
	wantErr(t, "append to deleted", st.Append(ledger.RoleUser, Text("y")), ledger.ErrNotFound)
	wantErr(t, "metadata on deleted", stale.SetMetadata("k", "v"), ledger.ErrNotFound)
	wantErr(t, "reload deleted", stale.Reload(ctx), ledger.ErrNotFound)
	if st.Len() != 1 {
		t.Fatal("failed append changed the state")
	}
	fresh := Create(t, s, ledger.WithID("gone"))
	if fresh.Len() != 0 {
		t.Fatalf("recreated thread has %d turns", fresh.Len())
	}
	wantErr(t, "append to deleted after recreate", st.Append(ledger.RoleUser, Text("y")), ledger.ErrNotFound)
	if got := Load(t, s, "gone"); got.Len() != 0 {
		t.Fatalf("a stale state wrote into the recreated thread: %d turns", got.Len())
	}
}

func testNotFound(t *testing.T, open Opener) {
	s := open(t)
	_, err := s.Load(context.Background(), "missing")
	wantErr(t, "load", err, ledger.ErrNotFound, "missing")
	wantErr(t, "delete", s.Delete(context.Background(), "missing"), ledger.ErrNotFound, "missing")
}

func testInvalidID(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	for _, id := range []string{"../escape", "a/b", ".hidden", strings.Repeat("x", ledger.MaxIDLen+1), "sp ace"} {
		_, err := s.Create(ctx, ledger.WithID(id))
		wantErr(t, "create "+id, err, ledger.ErrInvalidID)
		_, err = s.Load(ctx, id)
		wantErr(t, "load "+id, err, ledger.ErrInvalidID)
		wantErr(t, "delete "+id, s.Delete(ctx, id), ledger.ErrInvalidID)
	}
	for info, err := range s.List(ctx) {
		t.Fatalf("an invalid id left a thread behind: %v %v", info, err)
	}
}

func testCreateTaken(t *testing.T, open Opener) {
	s := open(t)
	st := Create(t, s, ledger.WithID("dup"))
	Append(t, st, ledger.RoleUser, Text("first"))
	_, err := open(t).Create(context.Background(), ledger.WithID("dup"), ledger.WithMetadata(map[string]string{"k": "v"}))
	wantErr(t, "create taken", err, ledger.ErrConflict, `"dup" already exists`)
	got := Load(t, s, "dup")
	if got.Len() != 1 || len(got.AllMetadata()) != 0 {
		t.Fatalf("the existing thread changed: %d turns, metadata %v", got.Len(), got.AllMetadata())
	}
	Append(t, st, ledger.RoleUser, Text("still writable"))
}

func testConflict(t *testing.T, open Opener) {
	ctx := context.Background()
	Create(t, open(t), ledger.WithID("shared"))
	a := Load(t, open(t), "shared")
	b := Load(t, open(t), "shared")
	Append(t, a, ledger.RoleUser, Text("a1"))
	before := b.Turns()
	wantErr(t, "stale append", b.Append(ledger.RoleUser, Text("b1")), ledger.ErrConflict)
	wantErr(t, "stale metadata", b.SetMetadata("k", "v"), ledger.ErrConflict)
	EqualTurns(t, b.Turns(), before)
	if _, ok := b.Metadata("k"); ok {
		t.Fatal("a refused metadata change is visible")
	}
	if err := b.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	Append(t, b, ledger.RoleUser, Text("b1"))
	wantErr(t, "now a is stale", a.Append(ledger.RoleUser, Text("a2")), ledger.ErrConflict)
	got := Load(t, open(t), "shared").Turns()
	if len(got) != 2 || got[0].Artifacts[0] != Text("a1") || got[1].Artifacts[0] != Text("b1") {
		t.Fatalf("stored %s", Show(got))
	}
}

func testConcurrentWriters(t *testing.T, open Opener) {
	const writers, each = 2, 15
	ctx := context.Background()
	Create(t, open(t), ledger.WithID("race"))
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		st := Load(t, open(t), "race")
		wg.Go(func() {
			for i := 0; i < each; {
				err := st.Append(ledger.RoleUser, Text(fmt.Sprintf("w%d-%d", w, i)))
				switch {
				case err == nil:
					i++
				case errors.Is(err, ledger.ErrConflict):
					if err := st.Reload(ctx); err != nil {
						errs <- err
						return
					}
				default:
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	turns := Load(t, open(t), "race").Turns()
	if len(turns) != writers*each {
		t.Fatalf("%d turns, want %d", len(turns), writers*each)
	}
	next := make([]int, writers)
	for _, tu := range turns {
		var w, i int
		if _, err := fmt.Sscanf(tu.Artifacts[0].(artifact.Text).Content, "w%d-%d", &w, &i); err != nil {
			t.Fatal(err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: turn %d where %d was due (lost, doubled or reordered)", w, i, next[w])
		}
		next[w]++
	}
}

func testBadTurns(t *testing.T, open Opener) {
	s := open(t)
	st := Create(t, s, ledger.WithID("bad"))
	Append(t, st, ledger.RoleUser, Text("good"))
	cases := []struct {
		role ledger.Role
		arts []artifact.Artifact
		msg  string
	}{
		{"robot", []artifact.Artifact{Text("x")}, `invalid role "robot"`},
		{ledger.RoleUser, []artifact.Artifact{nil}, "artifact 1 of 1 is nil"},
		{ledger.RoleUser, []artifact.Artifact{Text("x"), (*artifact.Text)(nil)}, "artifact 2 of 2 is nil"},
		{ledger.RoleUser, []artifact.Artifact{artifact.Unknown{Type: "odd", Raw: json.RawMessage(`{bad`)}}, `unknown kind "odd" holds invalid JSON`},
	}
	for _, c := range cases {
		err := st.Append(c.role, c.arts...)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("append %v: err %v, want it to mention %q", c.arts, err, c.msg)
		}
	}
	if st.Len() != 1 {
		t.Fatalf("in memory %d turns, want 1", st.Len())
	}
	Append(t, st, ledger.RoleUser, &artifact.Text{Content: "after"})
	if a := st.Turns()[1].Artifacts[0]; a != Text("after") {
		t.Fatalf("in memory %#v, want the value a pointer pointed to", a)
	}
	got := Load(t, open(t), "bad").Turns()
	if len(got) != 2 || got[1].Artifacts[0] != Text("after") {
		t.Fatalf("stored %s", Show(got))
	}
}

func testClosedStore(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	st := Create(t, s, ledger.WithID("closing"))
	Append(t, st, ledger.RoleUser, Text("kept"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	refusesAll(t, ctx, s, "closing", ledger.ErrClosed)
	wantErr(t, "append", st.Append(ledger.RoleUser, Text("x")), ledger.ErrClosed)
	wantErr(t, "metadata", st.SetMetadata("k", "v"), ledger.ErrClosed)
	if st.Len() != 1 {
		t.Fatal("history of a closed thread is gone")
	}
	EqualTurns(t, Load(t, open(t), "closing").Turns(), st.Turns())
}

// refusesAll checks that every Store method fails with target: Create
// with opts, Load and Delete of thread id, and List.
func refusesAll(t *testing.T, ctx context.Context, s ledger.Store, id string, target error, opts ...ledger.ThreadOption) {
	t.Helper()
	_, err := s.Create(ctx, opts...)
	wantErr(t, "create", err, target)
	_, err = s.Load(ctx, id)
	wantErr(t, "load", err, target)
	wantErr(t, "delete", s.Delete(ctx, id), target)
	for _, err := range s.List(ctx) {
		wantErr(t, "list", err, target)
	}
}

func testClosedThread(t *testing.T, open Opener) {
	s := open(t)
	st := Create(t, s, ledger.WithID("t"))
	Append(t, st, ledger.RoleUser, Text("x"))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "append", st.Append(ledger.RoleUser, Text("y")), ledger.ErrClosed)
	again := Load(t, s, "t")
	Append(t, again, ledger.RoleUser, Text("y"))
	if again.Len() != 2 || st.Len() != 1 {
		t.Fatalf("lens %d %d", again.Len(), st.Len())
	}
}

func testCancelled(t *testing.T, open Opener) {
	s := open(t)
	Create(t, s, ledger.WithID("c"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	refusesAll(t, ctx, s, "c", context.Canceled, ledger.WithID("d"))
	if _, err := s.Load(context.Background(), "d"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a cancelled create left a thread: %v", err)
	}
	Load(t, s, "c")
}
