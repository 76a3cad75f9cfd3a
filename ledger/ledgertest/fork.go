package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// forkParent makes the thread a fork is cut from: every artifact kind,
// stamped turns, a finished approval, a call that started a child agent,
// tool-search activations before and after the cut, a label and a lease.
// It returns the thread and the cut: at fits between its turns, with the
// approval and the child's call before it.
func forkParent(t *testing.T, s ledger.Store, id string) (*ledger.StoredThread, int) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	turns := []ledger.Turn{
		{Role: ledger.RoleSystem, Time: at(0), Artifacts: []artifact.Artifact{Text("be brief")}},
		{Role: ledger.RoleUser, Time: at(1), Artifacts: EveryKind()},
		{Role: ledger.RoleAssistant, Time: at(2), Artifacts: []artifact.Artifact{
			artifact.ToolCall{ID: "d1", Name: "delete_file", Arguments: `{"path":"a"}`},
			artifact.ToolCall{ID: "k1", Name: "researcher", Arguments: `{"task":"look"}`}}},
		{Role: ledger.RoleTool, Time: at(3), Artifacts: []artifact.Artifact{
			artifact.Pending{ToolCallID: "d1", Name: "delete_file", Arguments: `{"path":"a"}`, Reason: "deletes"},
			artifact.ToolResult{ToolCallID: "k1", Name: "researcher", Content: "found it"}}},
		{Role: ledger.RoleTool, Time: at(4), Artifacts: []artifact.Artifact{
			artifact.Decision{ToolCallID: "d1", Name: "delete_file", Approved: true, By: "ann"},
			artifact.ToolResult{ToolCallID: "d1", Name: "delete_file", Content: "deleted"}}},
		{Role: ledger.RoleAssistant, Time: at(5), Artifacts: []artifact.Artifact{Text("done"), artifact.Finish{Reason: "stop"}}},
		// The cut is here (6): what follows belongs to the parent alone.
		{Role: ledger.RoleUser, Time: at(6), Artifacts: []artifact.Artifact{Text("and now?")}},
		{Role: ledger.RoleAssistant, Time: at(7), Artifacts: []artifact.Artifact{
			artifact.ToolCall{ID: "k2", Name: "researcher", Arguments: `{"task":"more"}`}}},
		{Role: ledger.RoleTool, Time: at(8), Artifacts: []artifact.Artifact{
			artifact.ToolResult{ToolCallID: "k2", Name: "researcher", Content: "more"}}},
		{Role: ledger.RoleAssistant, Time: at(9), Artifacts: []artifact.Artifact{
			artifact.Summary{Content: "they talked", First: 1, Last: 8}, Text("summed up")}},
		{Role: ledger.RoleUser, Time: at(10), Artifacts: []artifact.Artifact{
			artifact.ToolCall{ID: "p1", Name: "nope", Arguments: "{}"}}}, // a user turn's call opens nothing
		{Role: ledger.RoleAssistant, Time: at(11), Artifacts: []artifact.Artifact{
			artifact.ToolCall{ID: "d2", Name: "delete_file", Arguments: `{"path":"b"}`}}},
		{Role: ledger.RoleTool, Time: at(12), Artifacts: []artifact.Artifact{
			artifact.Pending{ToolCallID: "d2", Name: "delete_file", Arguments: `{"path":"b"}`}}},
	}
	meta := map[string]string{
		"tenant":                   "acme",
		"lode.label.untrusted":     "web_fetch",
		"lode.tools.activated":     `[{"tool":"web_fetch","at":2},{"tool":"deploy","at":7}]`,
		"lode.agent.child.k1":      "child-1",
		"lode.agent.child.k2":      "child-2",
		"lode.temporal.staged.d2":  "{}",
		"lode.agent.awaiting":      `["x"]`,
		ledger.ForkedFromKey:       "grandparent",
		ledger.ForkedAtKey:         "3",
		"lode.agent.parent_thread": "caller",
	}
	st := Create(t, s, ledger.WithID(id), ledger.WithTurns(turns...), ledger.WithMetadata(meta))
	if _, err := st.AcquireLease(context.Background(), "worker", time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	return st, 6
}

// forkOK forks id at at in s, failing t otherwise; the fork is closed when
// the test ends.
func forkOK(t testing.TB, s ledger.Store, id string, at int, opts ...ledger.ForkOption) *ledger.StoredThread {
	t.Helper()
	f, err := ledger.Fork(context.Background(), s, id, at, opts...)
	if err != nil {
		t.Fatalf("fork %s at %d: %v", id, at, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func testForkKeeps(t *testing.T, open Opener) {
	s := open(t)
	parent, cut := forkParent(t, s, "parent")
	before := parent.AllMetadata()
	f := forkOK(t, s, "parent", cut)
	if f.ID() == "parent" || ledger.CheckID(f.ID()) != nil {
		t.Fatalf("fork ID %q", f.ID())
	}
	want := parent.Turns()[:cut]
	EqualTurns(t, f.Turns(), want)
	wantMeta := map[string]string{
		"tenant":                   "acme",
		"lode.label.untrusted":     "web_fetch",
		"lode.tools.activated":     `[{"at":2,"tool":"web_fetch"}]`,
		"lode.agent.child.k1":      "child-1",
		"lode.agent.parent_thread": "caller",
		ledger.ForkedFromKey:       "parent",
		ledger.ForkedAtKey:         strconv.Itoa(cut),
	}
	if got := f.AllMetadata(); !maps.Equal(got, wantMeta) {
		t.Fatalf("fork metadata:\n got %v\nwant %v", got, wantMeta)
	}
	if l, err := f.Lease(); err != nil || l != (ledger.Lease{}) {
		t.Fatalf("the fork inherited a lease: %+v, %v", l, err)
	}
	if open := f.OpenCalls(); len(open) != 0 {
		t.Fatalf("the fork has open calls %v", open)
	}

	// A reload from another instance reads the same fork.
	again := Load(t, open(t), f.ID())
	EqualTurns(t, again.Turns(), want)
	if !maps.Equal(again.AllMetadata(), wantMeta) {
		t.Fatalf("reloaded fork metadata %v", again.AllMetadata())
	}

	// The parent is unchanged, and parent and fork grow apart.
	p := Load(t, open(t), "parent")
	EqualTurns(t, p.Turns(), parent.Turns())
	if !maps.Equal(p.AllMetadata(), before) {
		t.Fatalf("the parent's metadata changed:\n got %v\nwant %v", p.AllMetadata(), before)
	}
	Append(t, again, ledger.RoleUser, Text("fork only"))
	Append(t, p, ledger.RoleUser, Text("parent only"))
	fo := Load(t, open(t), f.ID()).Turns()
	pa := Load(t, open(t), "parent").Turns()
	if len(fo) != cut+1 || fo[cut].Artifacts[0] != Text("fork only") {
		t.Fatalf("fork after append: %s", Show(fo[cut:]))
	}
	if len(pa) != len(parent.Turns())+1 || pa[len(pa)-1].Artifacts[0] != Text("parent only") {
		t.Fatalf("parent after append: %s", Show(pa[len(pa)-3:]))
	}
	EqualTurns(t, pa[:len(pa)-1], parent.Turns())

	// The fork is listed like any thread.
	found := false
	for info, err := range open(t).List(context.Background()) {
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if info.ID == f.ID() {
			found = true
			if info.Turns != cut+1 || info.Metadata[ledger.ForkedFromKey] != "parent" {
				t.Fatalf("listed fork: %+v", info)
			}
		}
	}
	if !found {
		t.Fatal("the fork is not listed")
	}
}

func testForkEnds(t *testing.T, open Opener) {
	s := open(t)
	st := Create(t, s, ledger.WithID("short"), ledger.WithMetadata(map[string]string{"tenant": "acme"}))
	Append(t, st, ledger.RoleUser, Text("hi"))
	Append(t, st, ledger.RoleAssistant, Text("hello"))

	empty := forkOK(t, s, "short", 0, ledger.WithForkID("empty"))
	if empty.ID() != "empty" || empty.Len() != 0 || empty.AllMetadata()["tenant"] != "acme" {
		t.Fatalf("fork at 0: %s, %d turns, %v", empty.ID(), empty.Len(), empty.AllMetadata())
	}
	whole := forkOK(t, s, "short", 2, ledger.WithForkID("whole"))
	EqualTurns(t, whole.Turns(), st.Turns())

	// A fork of a fork links to the fork, and keeps what it kept.
	ff := forkOK(t, s, "whole", 1, ledger.WithForkID("whole.1"))
	EqualTurns(t, ff.Turns(), st.Turns()[:1])
	if m := ff.AllMetadata(); m[ledger.ForkedFromKey] != "whole" || m[ledger.ForkedAtKey] != "1" || m["tenant"] != "acme" {
		t.Fatalf("fork of a fork: metadata %v", m)
	}
	Append(t, ff, ledger.RoleAssistant, Text("another answer"))
	if Load(t, open(t), "whole").Len() != 2 || Load(t, open(t), "short").Len() != 2 {
		t.Fatal("appending to a fork of a fork changed its ancestors")
	}
}

func testForkRefuses(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	parent, _ := forkParent(t, s, "parent")
	n := parent.Len()
	_, err := ledger.Fork(ctx, s, "missing", 0)
	wantErr(t, "fork of a missing thread", err, ledger.ErrNotFound, "missing")
	for _, at := range []int{-1, n + 1} {
		_, err := ledger.Fork(ctx, s, "parent", at)
		wantErr(t, fmt.Sprintf("fork at %d", at), err, ledger.ErrForkPoint, fmt.Sprintf("keep 0 to %d", n))
	}
	// Between a call and its result, or with a call waiting for approval.
	for _, c := range []struct {
		at   int
		call string
	}{{3, "d1"}, {4, "d1"}, {8, "k2"}, {n, "d2"}} {
		_, err := ledger.Fork(ctx, s, "parent", c.at)
		wantErr(t, fmt.Sprintf("fork at %d", c.at), err, ledger.ErrForkPoint, "call "+c.call, "no result")
	}
	// After the summary of turns 1 to 8, which it keeps.
	forkOK(t, s, "parent", 10)
	_, err = ledger.Fork(ctx, s, "parent", 5, ledger.WithForkID("parent"))
	wantErr(t, "fork onto a taken ID", err, ledger.ErrConflict)
	_, err = ledger.Fork(ctx, s, "parent", 5, ledger.WithForkID("../x"))
	wantErr(t, "fork onto an invalid ID", err, ledger.ErrInvalidID)
	// Nothing refused was created: the parent and the fork at 10.
	count := 0
	for _, err := range open(t).List(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		count++
	}
	if count != 2 {
		t.Fatalf("%d threads after the refused forks, want 2", count)
	}
}

const forkCrashEnv = "LODE_LEDGERTEST_FORK_CRASH"

type forkChild struct{ Where string }

// forkCrashTurns is the length of the thread ForkCrash forks; at 4 KiB a
// turn, a fork writes 400 KiB, so that a kill can land inside the write.
const forkCrashTurns = 100

// ForkCrash checks that a fork killed with SIGKILL leaves no fork or a
// whole one, and the parent intact, and so does a delete of a fork that
// has forks of its own (which a sharing store must leave whole). The test
// binary re-runs itself (test named testName) as a child that, again and
// again, forks one thread, forks the fork, and deletes the first fork,
// printing "forked N" after fork N returns, "deleting N" before the
// delete and "deleted N" after it; the parent kills it after a few forks, then checks every thread
// in the store.
//
// newStorage and open are as for LeaseCrash. The test that calls
// ForkCrash must call it first thing, since in the child it never returns.
func ForkCrash(t *testing.T, testName string, newStorage func(t testing.TB) string, open func(where string) (ledger.Store, error)) {
	var c forkChild
	if ChildConfig(forkCrashEnv, testName, &c) {
		RunChild("fork crash child", func(say func(string)) error { return forkCrashChild(open, c, say) })
	}
	where := newStorage(t)
	opener := OpenerOf(where, open)
	turns := make([]ledger.Turn, forkCrashTurns)
	for i := range turns {
		turns[i] = ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{Text(fmt.Sprintf("turn %d ", i) + strings.Repeat(string(rune('a'+i%26)), 4<<10))}}
	}
	parent := Create(t, opener(t), ledger.WithID("parent"), ledger.WithTurns(turns...)).Turns()
	for round, after := range []int{1, 3, 7} {
		p := StartChild(t, testName, forkCrashEnv, forkChild{Where: where})
		reported, deleted := map[string]bool{}, map[string]bool{}
		// The kill lands in the step after the after-th: a fork, a fork
		// of a fork, or (round 1) a delete of a fork that has a fork.
		steps := 0
		note := func(line string) {
			if id, ok := strings.CutPrefix(line, "forked "); ok {
				reported[id] = true
				steps++
			}
			if id, ok := strings.CutPrefix(line, "deleting "); ok {
				delete(reported, id) // it may be gone, or whole
				steps++
			}
			if id, ok := strings.CutPrefix(line, "deleted "); ok {
				deleted[id] = true
			}
		}
		p.Await(t, func(line string) bool {
			note(line)
			return steps >= after
		})
		for _, line := range p.Kill(t) {
			note(line)
		}
		s := opener(t)
		EqualTurns(t, Load(t, s, "parent").Turns(), parent)
		forks := 0
		for info, err := range s.List(context.Background()) {
			if err != nil {
				t.Fatalf("round %d: list after the kill: %v", round, err)
			}
			if info.ID == "parent" {
				continue
			}
			forks++
			if deleted[info.ID] {
				t.Fatalf("round %d: fork %s was reported deleted but is listed", round, info.ID)
			}
			f := Load(t, s, info.ID)
			// A fork of a fork keeps no more than its parent kept: the
			// parent's first at turns either way.
			at, err := strconv.Atoi(f.AllMetadata()[ledger.ForkedAtKey])
			if err != nil || f.AllMetadata()[ledger.ForkedFromKey] == "" {
				t.Fatalf("round %d: fork %s has metadata %v", round, info.ID, f.AllMetadata())
			}
			SameJSON(t, fmt.Sprintf("round %d: fork %s", round, info.ID), f.Turns(), parent[:at])
			delete(reported, info.ID)
		}
		if len(reported) > 0 {
			t.Fatalf("round %d: forks reported made are missing: %v", round, reported)
		}
		t.Logf("round %d: killed after %d steps; the store holds %d whole forks", round, after, forks)
	}
}

func forkCrashChild(open func(string) (ledger.Store, error), c forkChild, say func(string)) error {
	s, err := open(c.Where)
	if err != nil {
		return err
	}
	ctx := context.Background()
	for i := 0; i < crashMax; i++ {
		id := ledger.NewID()
		f, err := ledger.Fork(ctx, s, "parent", forkCrashTurns-i%7, ledger.WithForkID(id))
		if err != nil {
			return err
		}
		f.Close()
		say("forked " + id)
		ff, err := ledger.Fork(ctx, s, id, forkCrashTurns-7-i%5, ledger.WithForkID(id+".f"))
		if err != nil {
			return err
		}
		ff.Close()
		say("forked " + id + ".f")
		say("deleting " + id)
		if err := s.Delete(ctx, id); err != nil {
			return err
		}
		say("deleted " + id)
	}
	return errors.New("not killed")
}

// BenchFork measures one Fork of a thread of size turns, kept whole.
func BenchFork(b *testing.B, s ledger.Store, size int) {
	ctx := context.Background()
	st, err := s.Create(ctx, ledger.WithTurns(seedTurns(size)...))
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	b.ReportAllocs()
	for b.Loop() {
		f, err := ledger.Fork(ctx, s, st.ID(), size)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchForkLoad measures loading the last of a chain of depth forks that
// starts at a thread of size turns: each fork is cut at the end of the
// thread before it and has one turn of its own appended, so the thread
// loaded has size+depth turns, held by depth+1 threads in a store that
// shares them.
func BenchForkLoad(b *testing.B, s ledger.Store, size, depth int) {
	ctx := context.Background()
	st, err := s.Create(ctx, ledger.WithTurns(seedTurns(size)...))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < depth; i++ {
		f, err := ledger.Fork(ctx, s, st.ID(), st.Len())
		st.Close()
		if err != nil {
			b.Fatal(err)
		}
		role := ledger.RoleUser
		if f.Len()%2 == 1 {
			role = ledger.RoleAssistant
		}
		if err := f.Append(role, benchTurn(f.Len())...); err != nil {
			b.Fatal(err)
		}
		st = f
	}
	st.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := s.Load(ctx, st.ID())
		if err != nil {
			b.Fatal(err)
		}
		if got.Len() != size+depth {
			b.Fatalf("loaded %d turns", got.Len())
		}
		got.Close()
	}
}
