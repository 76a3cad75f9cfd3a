package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/ledgertest"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/x/provider/script"
)

const leaseCrashEnv = "LODE_LOOPSTORETEST_LEASE_CRASH"

// leaseChild is what one resumer child is told, through
// ledgertest.StartChild.
type leaseChild struct {
	Where  string        // the storage
	Thread string        // the thread to resume
	Marker string        // the file where each tool run is written down
	Block  string        // "name path" of the call to stop inside; "" for none
	Skew   time.Duration // added to the child's lease clock
	TTL    time.Duration // the child's lease duration; 0 for the default
	Decide bool          // approve d and t; else resume with no decisions
}

// leaseRound is one run of resumers, some killed.
type leaseRound struct {
	name string
	// children run one after another, each killed; a child with no Block
	// is killed after a random number of its progress lines.
	children []leaseChild
}

// LeaseCrash checks that an approved call runs at most once while its
// claimer lives, whoever else resumes, and that a dead claimer's calls are
// settled once its lease expires. The test binary re-runs itself (test
// named testName) as resumer children, each SIGKILLed inside an approved
// call or at a random point after its claim; while a child is inside a
// call, resumers in this process — with no decisions, deciding the other
// pending call, a Run, one holding a State read before the child began —
// must be refused and record nothing. Every tool run is written to a
// marker file, so runs are counted across processes. After the kills, a
// resumer whose clock is past the dead owners' leases takes over and the
// final answer arrives on a well-formed thread.
//
// newStorage returns where fresh storage is; open opens a store there, in
// parent and child. The calling test must call LeaseCrash first thing.
func LeaseCrash(t *testing.T, testName string, newStorage func(t testing.TB) string, open func(where string) (ledger.Store, error)) {
	var c leaseChild
	if ledgertest.ChildConfig(leaseCrashEnv, testName, &c) {
		ledgertest.RunChild("lease crash child", func(say func(string)) error { return leaseCrashChild(open, c, say) })
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random kill points from seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	rounds := []leaseRound{
		{"killed inside the delete", []leaseChild{{Block: "delete_file a", Decide: true}}},
		{"killed inside the touch", []leaseChild{{Block: "touch b", Decide: true}}},
		{"killed at random", []leaseChild{{Decide: true}}},
		{"killed at random again", []leaseChild{{Decide: true}}},
		{"two owners die", []leaseChild{{Block: "delete_file a", Decide: true}, {Block: "touch b", Skew: time.Hour}}},
		// A lease of a few milliseconds, renewed all the while this process
		// checks, and maybe as the kill lands; the clock an hour ahead keeps
		// it live to this process however slowly the child renews.
		{"killed while renewing", []leaseChild{{Block: "touch b", Decide: true, Skew: time.Hour, TTL: 15 * time.Millisecond}}},
	}
	where := newStorage(t)
	for i, r := range rounds {
		t.Run(r.name, func(t *testing.T) {
			leaseCrashRound(t, testName, where, open, fmt.Sprintf("lease-crash-%d", i), r, rng)
		})
	}
}

// marks reads the marker file: "who name path" per tool run.
func marks(t testing.TB, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int{}
	}
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int)
	for line := range strings.Lines(string(b)) {
		out[strings.TrimSuffix(line, "\n")]++
	}
	return out
}

// mark writes down one tool run; synced, so a kill right after keeps it.
func mark(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func leaseCrashRound(t *testing.T, testName, where string, open func(string) (ledger.Store, error), id string, r leaseRound, rng *rand.Rand) {
	opener := ledgertest.OpenerOf(where, open)
	marker := filepath.Join(t.TempDir(), "runs")
	ctx := context.Background()
	parent := &tools{started: func(name, path string) {
		if err := mark(marker, "parent "+name+" "+path); err != nil {
			t.Error(err)
		}
	}}
	st, err := opener(t).Create(ctx, ledger.WithID(id), ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{ledgertest.Text("tidy up")}}))
	if err != nil {
		t.Fatal(err)
	}
	answer := script.Reply(
		artifact.ToolCall{ID: "d", Name: "delete_file", Arguments: `{"path":"a"}`},
		artifact.ToolCall{ID: "t", Name: "touch", Arguments: `{"path":"b"}`},
		artifact.ToolCall{ID: "x", Name: "delete_file", Arguments: `{"path":"c"}`},
	)
	if _, err := parent.step(t).Run(ctx, st, script.Play(answer)); !errors.Is(err, loop.ErrPaused) {
		t.Fatalf("run: %v", err)
	}
	stale := reload(t, opener, id) // read before any resumer began

	for k, c := range r.children {
		c.Where, c.Thread, c.Marker = where, id, marker
		child := ledgertest.StartChild(t, testName, leaseCrashEnv, c)
		if c.Block != "" {
			want := "started " + c.Block
			child.Await(t, func(line string) bool { return line == want })
			if m := marks(t, marker); m["child "+c.Block] < 1 || m["child delete_file a"] > 1 {
				t.Fatalf("child %d is inside %s; runs so far %v", k, c.Block, m)
			}
			refusedWhileLive(t, opener, id, parent, marker, stale)
		} else {
			n, got := 1+rng.IntN(3), 0
			child.Await(t, func(string) bool { got++; return got == n })
			t.Logf("child %d killed after %d progress lines", k, got)
		}
		child.Kill(t)
		wellFormed(t, reload(t, opener, id), false)
		if c.Block != "" {
			// The dead owner's lease holds until it expires.
			live := reload(t, opener, id)
			n := live.Len()
			_, err := parent.step(t).Resume(ctx, live, script.Play(), nil)
			if !errors.Is(err, ledger.ErrLeased) || reload(t, opener, id).Len() != n {
				t.Fatalf("resume under a dead owner's live lease: %v", err)
			}
		}
	}
	for line, n := range marks(t, marker) {
		if strings.HasPrefix(line, "parent ") {
			t.Fatalf("this process ran %s %d times while a child held the lease", line, n)
		}
	}

	// Past every lease the children took: take over and finish.
	st = reload(t, opener, id)
	prov := script.Play(script.Text("done"))
	if _, err := parent.step(t, loop.WithClock(ledgertest.AfterLeases)).Resume(ctx, st, prov, []artifact.Decision{loop.Deny("x", "keep c")}); err != nil {
		t.Fatal(err)
	}
	final := reload(t, opener, id)
	wellFormed(t, final, true)
	if last := final.Turns()[final.Len()-1]; last.Role != ledger.RoleAssistant || !reflect.DeepEqual(last.Artifacts, []artifact.Artifact{ledgertest.Text("done")}) {
		t.Fatalf("the last turn is %s %v, want the final answer", last.Role, last.Artifacts)
	}
	shown := lastRequestResults(t, prov)
	res := results(final)
	m := marks(t, marker)
	runs := func(name string) int { return m["child "+name] + m["parent "+name] }
	t.Logf("runs %v; results d=%q t=%q", m, res["d"].Content, res["t"].Content)
	// The delete is not idempotent: it ran at most once, and a run whose
	// result never landed reads as interrupted.
	if runs("delete_file a") > 1 || m["parent delete_file a"] != 0 {
		t.Fatalf("the delete ran %v", m)
	}
	if runs("delete_file c") != 0 || !strings.Contains(shown["x"], "Their reason: keep c") {
		t.Fatalf("the denied call ran or was not denied: %v, shown %q", m, shown["x"])
	}
	if res["d"].Content != "delete_file a: done" && res["d"].Content != loop.InterruptedMessage {
		t.Fatalf("the delete's result %q", res["d"].Content)
	}
	if res["t"].Content != "touch b: done" {
		t.Fatalf("the idempotent touch's result %q", res["t"].Content)
	}
	// Each child ran each call at most once; the touch may run again only
	// after a takeover, once per owner that died inside it, plus the last.
	deadInTouch := strings.Count(strings.Join(blocks(r.children), ","), "touch b")
	if runs("touch b") > 1+deadInTouch+len(r.children) || m["parent touch b"] > 1 {
		t.Fatalf("the touch ran %v", m)
	}
	switch r.children[len(r.children)-1].Block {
	case "delete_file a":
		if res["d"].Content != loop.InterruptedMessage || m["child delete_file a"] != 1 || m["parent touch b"] != 1 || runs("touch b") != 1 {
			t.Fatalf("killed inside the delete: results %+v, runs %v", res, m)
		}
	case "touch b":
		if res["d"].Content != loop.InterruptedMessage || m["child delete_file a"] != 1 || m["parent touch b"] != 1 || m["child touch b"] != deadInTouch {
			t.Fatalf("killed inside the touch: results %+v, runs %v", res, m)
		}
	}
	if !reflect.DeepEqual(shown, map[string]string{"d": res["d"].Content, "t": res["t"].Content, "x": res["x"].Content}) {
		t.Fatalf("the model was shown %v", shown)
	}
}

func blocks(cs []leaseChild) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Block)
	}
	return out
}

// refusedWhileLive resumes in this process while a child is inside an
// approved call: every way in is refused with the child's lease, and
// nothing is recorded or run.
func refusedWhileLive(t *testing.T, opener Opener, id string, f *tools, marker string, stale *ledger.StoredThread) {
	t.Helper()
	ctx := context.Background()
	before := reload(t, opener, id)
	holder, err := before.Lease()
	if err != nil || !holder.Live(time.Now()) || !strings.HasPrefix(holder.Owner, "lease-child/") {
		t.Fatalf("the child's lease: %+v, %v", holder, err)
	}
	runsBefore := marks(t, marker)
	tries := []struct {
		name string
		try  func(st *ledger.StoredThread, prov *script.Provider) error
	}{
		{"resume with no decisions", func(st *ledger.StoredThread, prov *script.Provider) error {
			_, err := f.step(t).Resume(ctx, st, prov, nil)
			return err
		}},
		{"resume deciding the other call", func(st *ledger.StoredThread, prov *script.Provider) error {
			_, err := f.step(t).Resume(ctx, st, prov, []artifact.Decision{loop.Deny("x", "no")})
			return err
		}},
		{"run", func(st *ledger.StoredThread, prov *script.Provider) error {
			_, err := f.step(t).Run(ctx, st, prov)
			return err
		}},
	}
	for _, c := range tries {
		st := reload(t, opener, id)
		prov := script.Play(script.Text("never"))
		err := c.try(st, prov)
		var le *ledger.LeaseError
		// The child renews meanwhile: the holder is the same owner since the
		// same time, with an expiry that may have moved on.
		if !errors.As(err, &le) || !errors.Is(err, ledger.ErrConflict) || le.Holder.Owner != holder.Owner || !le.Holder.Acquired.Equal(holder.Acquired) || le.Lost {
			t.Fatalf("%s: %v, want the child's *ledger.LeaseError", c.name, err)
		}
		if !strings.Contains(err.Error(), "is leased to "+holder.Owner+" since ") {
			t.Fatalf("%s: %v does not name the holder", c.name, err)
		}
		if len(prov.Requests()) != 0 {
			t.Fatalf("%s asked the model", c.name)
		}
	}
	// A State read before the child took the lease meets the store's
	// compare-and-swap instead.
	if _, err := f.step(t).Resume(ctx, stale, script.Play(), nil); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("resume on a state read before the child: %v, want ledger.ErrConflict", err)
	}
	after := reload(t, opener, id)
	if !reflect.DeepEqual(after.Turns(), before.Turns()) || !reflect.DeepEqual(marks(t, marker), runsBefore) {
		t.Fatalf("refused resumers changed the thread (%s, was %s) or ran %v", ledgertest.Roles(after.Turns()), ledgertest.Roles(before.Turns()), marks(t, marker))
	}
	if got := pendingIDs(loop.Pending(after)); got != "x" {
		t.Fatalf("pending %q, want x", got)
	}
}

// wellFormed checks that no call has two results, every decision is
// recorded, and, when final, that every call is answered.
func wellFormed(t testing.TB, st ledger.State, final bool) {
	t.Helper()
	answered := make(map[string]int)
	approved := make(map[string]bool)
	for _, tu := range st.Turns() {
		for _, a := range tu.Artifacts {
			switch a := a.(type) {
			case artifact.ToolResult:
				answered[a.ToolCallID]++
			case artifact.Decision:
				if a.Approved {
					approved[a.ToolCallID] = true
				}
			}
		}
	}
	for id, n := range answered {
		if n > 1 {
			t.Fatalf("call %s has %d results: %s", id, n, ledgertest.Roles(st.Turns()))
		}
	}
	if !approved["d"] || !approved["t"] {
		t.Fatalf("a recorded approval was lost: %v", approved)
	}
	if final && (answered["d"] != 1 || answered["t"] != 1 || answered["x"] != 1 || loop.Pending(st) != nil) {
		t.Fatalf("unanswered calls: %v, pending %v", answered, loop.Pending(st))
	}
}

func leaseCrashChild(open func(string) (ledger.Store, error), c leaseChild, say func(string)) error {
	s, err := open(c.Where)
	if err != nil {
		return err
	}
	st, err := s.Load(context.Background(), c.Thread)
	if err != nil {
		return err
	}
	f := &tools{started: func(name, path string) {
		if err := mark(c.Marker, "child "+name+" "+path); err != nil {
			// Unwritten, the run would go uncounted: stop before it.
			fmt.Fprintln(os.Stderr, "lease crash child:", err)
			os.Exit(3)
		}
		say("started " + name + " " + path)
		if name+" "+path == c.Block {
			select {} // the parent kills us here
		}
	}}
	obs := loop.EmitterFunc(func(_ context.Context, ev loop.Event) {
		if _, ok := ev.(loop.DecidedEvent); ok {
			say("decided")
		}
	})
	var decisions []artifact.Decision
	if c.Decide {
		decisions = []artifact.Decision{loop.Approve("d"), loop.Approve("t")}
	}
	step := f.step(nil, loop.WithObserver(obs), loop.WithLeaseOwner("lease-child"), loop.WithLease(c.TTL),
		loop.WithClock(func() time.Time { return time.Now().Add(c.Skew) }))
	_, err = step.Resume(context.Background(), st, script.Play(), decisions)
	if err := step.Flush(context.Background()); err != nil {
		return err
	}
	say(fmt.Sprintf("resumed: %v", err))
	select {} // the parent kills us here
}
