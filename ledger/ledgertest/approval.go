package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

// The tests in this file append what a loop run appends — the calls of an
// answer, their results, the approval records (artifact.Pending and
// artifact.Decision), an interrupted call's error result, the lease
// records around them — through the ledger API alone, and check what
// another instance over the same storage reads back. That the loop appends
// these records, and reads them so, is checked on lode's stores by
// loop/internal/storetest.

// interrupted stands for the error result a run appends for a call whose
// process stopped while it ran; its wording is the loop's business.
const interrupted = "the call was interrupted"

// openIDs lists the IDs of st's open calls, in call order.
func openIDs(st *ledger.StoredThread) string {
	var ids []string
	for _, c := range st.OpenCalls() {
		ids = append(ids, c.Call.ID)
	}
	return strings.Join(ids, ",")
}

// Roles lists the turns' roles, space-separated.
func Roles(turns []ledger.Turn) string {
	rs := make([]string, 0, len(turns))
	for _, tu := range turns {
		rs = append(rs, string(tu.Role))
	}
	return strings.Join(rs, " ")
}

// A run: the user asks, the model answers with a call, the call's result
// comes back, the model answers. Each turn is stored the moment it is
// appended, while the run holds the thread's lease and renews it.
func testRunRecords(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	watcher := open(t)
	st := Create(t, s, ledger.WithID("run"))
	Append(t, st, ledger.RoleUser, Text("what is 1+1?"))
	acquireOK(t, st, "run-1", t0)
	call := artifact.ToolCall{ID: "c1", Name: "add", Arguments: `{"a":1,"b":1}`}
	Append(t, st, ledger.RoleAssistant, call, artifact.Usage{InputTokens: 12, OutputTokens: 3})
	if got := openIDs(st); got != "c1" {
		t.Fatalf("open calls after the answer: %q, want c1", got)
	}
	// The call runs now: another instance already finds its answer stored,
	// with the call open.
	w := Load(t, watcher, "run")
	if w.Len() != 2 || openIDs(w) != "c1" {
		t.Fatalf("while the call ran the stored thread had %d turns, open calls %q; want 2, c1", w.Len(), openIDs(w))
	}
	if err := st.RenewLease(ctx, "run-1", t0.Add(3*time.Second), leaseTTL); err != nil {
		t.Fatal(err)
	}
	Append(t, st, ledger.RoleTool, artifact.ToolResult{ToolCallID: "c1", Name: "add", Content: "2"})
	Append(t, st, ledger.RoleAssistant, Text("2"), artifact.Finish{Reason: "stop"})
	if err := st.ReleaseLease(ctx, "run-1"); err != nil {
		t.Fatal(err)
	}
	got := Load(t, open(t), "run")
	EqualTurns(t, got.Turns(), st.Turns())
	if r := Roles(got.Turns()); r != "user assistant tool assistant" || openIDs(got) != "" {
		t.Fatalf("stored roles %q, open calls %q", r, openIDs(got))
	}
	if l := leaseOf(t, got); l != (ledger.Lease{}) || got.Version() != st.Version() {
		t.Fatalf("after the run: lease %+v at version %d, want none at %d", l, got.Version(), st.Version())
	}
}

// A run that stopped between a call and its result leaves the call open;
// the next run reads it from the store and answers it.
func testRepairRecords(t *testing.T, open Opener) {
	call := artifact.ToolCall{ID: "c1", Name: "slow", Arguments: "{}"}
	Create(t, open(t), ledger.WithID("crashed"), ledger.WithTurns(
		ledger.Turn{Role: ledger.RoleUser, Artifacts: []artifact.Artifact{Text("go")}},
		ledger.Turn{Role: ledger.RoleAssistant, Artifacts: []artifact.Artifact{call}},
	))
	st := Load(t, open(t), "crashed")
	open1 := st.OpenCalls()
	if len(open1) != 1 || open1[0].Turn != 1 || open1[0].Call != call {
		t.Fatalf("open calls of the crashed thread: %+v, want c1 in turn 1", open1)
	}
	Append(t, st, ledger.RoleTool, artifact.ToolResult{ToolCallID: "c1", Name: "slow", IsError: true, Content: interrupted})
	Append(t, st, ledger.RoleAssistant, Text("ok"))
	got := Load(t, open(t), "crashed")
	r, ok := got.Turns()[2].Artifacts[0].(artifact.ToolResult)
	if got.Len() != 4 || !ok || !r.IsError || r.ToolCallID != "c1" || r.Content != interrupted || openIDs(got) != "" {
		t.Fatalf("stored %s, open calls %q", Show(got.Turns()), openIDs(got))
	}
}

// threeCalls is an answer that deletes a, reads b and deletes c.
var threeCalls = []artifact.Artifact{
	artifact.ToolCall{ID: "c1", Name: "delete_file", Arguments: `{"path":"a"}`},
	artifact.ToolCall{ID: "c2", Name: "read", Arguments: `{"path":"b"}`},
	artifact.ToolCall{ID: "c3", Name: "delete_file", Arguments: `{"path":"c"}`},
}

// pauseRecords stores thread id as a run leaves it when it pauses: the
// harmless read ran, the two deletes wait for a person.
func pauseRecords(t *testing.T, s ledger.Store, id string) *ledger.StoredThread {
	t.Helper()
	st := Create(t, s, ledger.WithID(id))
	Append(t, st, ledger.RoleUser, Text("tidy up"))
	Append(t, st, ledger.RoleAssistant, threeCalls...)
	Append(t, st, ledger.RoleTool,
		artifact.ToolResult{ToolCallID: "c2", Name: "read", Content: "read b: done"},
		artifact.Pending{ToolCallID: "c1", Name: "delete_file", Arguments: `{"path":"a"}`, Reason: "delete_file is destructive"},
		artifact.Pending{ToolCallID: "c3", Name: "delete_file", Arguments: `{"path":"c"}`},
	)
	return st
}

// pendingOf returns the Pending records of the thread's last turn.
func pendingOf(st ledger.State) []artifact.Pending {
	turns := st.Turns()
	if len(turns) == 0 {
		return nil
	}
	var out []artifact.Pending
	for _, a := range turns[len(turns)-1].Artifacts {
		if p, ok := a.(artifact.Pending); ok {
			out = append(out, p)
		}
	}
	return out
}

// A paused thread is reloaded by another instance, as a resumer in
// another process would: the pending calls come back as they were stored,
// and the decisions, the denial's result and the approved call's result
// are kept in order, with every field.
func testApprovalRecords(t *testing.T, open Opener) {
	ctx := context.Background()
	paused := pauseRecords(t, open(t), "paused")
	st := Load(t, open(t), "paused")
	EqualTurns(t, st.Turns(), paused.Turns())
	wantPending := []artifact.Pending{
		{ToolCallID: "c1", Name: "delete_file", Arguments: `{"path":"a"}`, Reason: "delete_file is destructive"},
		{ToolCallID: "c3", Name: "delete_file", Arguments: `{"path":"c"}`},
	}
	if got := pendingOf(st); !reflect.DeepEqual(got, wantPending) {
		t.Fatalf("reloaded pending %+v, want %+v", got, wantPending)
	}
	// A pending call has no result yet: it stays open.
	if got := openIDs(st); got != "c1,c3" {
		t.Fatalf("open calls of the paused thread %q, want c1,c3", got)
	}

	acquireOK(t, st, "resumer", t0)
	v := st.Version()
	decisions := []artifact.Artifact{
		artifact.Decision{ToolCallID: "c1", Name: "delete_file", Approved: true, Arguments: `{"path":"a.bak"}`, By: "ana"},
		artifact.Decision{ToolCallID: "c3", Name: "delete_file", Reason: "keep c", By: "ana"},
		artifact.ToolResult{ToolCallID: "c3", Name: "delete_file", IsError: true, Content: "denied: keep c"},
	}
	if err := st.AppendAt(v, ledger.RoleTool, decisions...); err != nil {
		t.Fatalf("claim at the version read: %v", err)
	}
	// The claim is durable before the approved call runs.
	claimed := Load(t, open(t), "paused")
	EqualTurns(t, claimed.Turns(), st.Turns())
	if got := openIDs(claimed); got != "c1" {
		t.Fatalf("open calls once claimed %q, want c1 (approved, not yet run)", got)
	}
	Append(t, st, ledger.RoleTool, artifact.ToolResult{ToolCallID: "c1", Name: "delete_file", Content: "delete_file a.bak: done"})
	Append(t, st, ledger.RoleAssistant, Text("tidied"))
	if err := st.ReleaseLease(ctx, "resumer"); err != nil {
		t.Fatal(err)
	}
	got := Load(t, open(t), "paused")
	EqualTurns(t, got.Turns(), st.Turns())
	if r := Roles(got.Turns()); r != "user assistant tool tool tool assistant" || openIDs(got) != "" {
		t.Fatalf("stored roles %q, open calls %q", r, openIDs(got))
	}
	if d, ok := got.Turns()[3].Artifacts[0].(artifact.Decision); !ok || d != decisions[0] {
		t.Fatalf("stored decision %#v, want %#v", got.Turns()[3].Artifacts[0], decisions[0])
	}
}

// Resumers in separate instances race to claim the same pending calls,
// each at the version it read: exactly one claim is stored, and the
// others get ErrConflict with nothing written. That compare-and-swap is
// what makes an approved call run once.
func testConcurrentResumers(t *testing.T, open Opener) {
	const resumers = 4
	for round, leased := range []bool{false, true} {
		id := fmt.Sprintf("resume%d", round)
		pauseRecords(t, open(t), id)
		threads := make([]*ledger.StoredThread, resumers)
		for i := range threads {
			threads[i] = Load(t, open(t), id) // each as its own process would
		}
		winner := race(t, fmt.Sprint("leased=", leased), threads, func(i int, st *ledger.StoredThread) error {
			owner := fmt.Sprint("r", i)
			if leased {
				// As a loop resumes: lease first, then claim at the
				// version the lease left.
				if _, err := st.AcquireLease(context.Background(), owner, t0, leaseTTL); err != nil {
					return err
				}
			}
			return st.AppendAt(st.Version(), ledger.RoleTool,
				artifact.Decision{ToolCallID: "c1", Name: "delete_file", Approved: true, By: owner},
				artifact.Decision{ToolCallID: "c3", Name: "delete_file", Approved: true, By: owner})
		})
		got := Load(t, open(t), id)
		if got.Len() != 4 {
			t.Fatalf("leased=%v: %d turns stored, want 4 (one claim): %s", leased, got.Len(), Roles(got.Turns()))
		}
		for _, a := range got.Turns()[3].Artifacts {
			if d, ok := a.(artifact.Decision); !ok || d.By != fmt.Sprint("r", winner) {
				t.Fatalf("leased=%v: stored claim %s, want r%d's", leased, Show(got.Turns()[3:]), winner)
			}
		}
		for i, st := range threads {
			if i != winner && st.Len() != 3 {
				t.Fatalf("leased=%v: the losing r%d holds %d turns in memory, want 3", leased, i, st.Len())
			}
		}
	}
}

// A claim made at the version read before anything else changed the
// thread is refused once something did: another owner's lease, or this
// State's own renewal. Nothing is written then.
func testClaimUnderLease(t *testing.T, open Opener) {
	ctx := context.Background()
	pauseRecords(t, open(t), "claim")
	a := Load(t, open(t), "claim")
	b := Load(t, open(t), "claim")
	read := a.Version()
	acquireOK(t, b, "b", t0)
	claim := artifact.Decision{ToolCallID: "c1", Name: "delete_file", Approved: true}
	wantErr(t, "claim after another owner's lease", a.AppendAt(read, ledger.RoleTool, claim), ledger.ErrConflict)
	if err := a.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := a.AcquireLease(ctx, "a", t0.Add(time.Second), leaseTTL)
	wantLeaseError(t, "acquire under b's lease", err, ledger.LeaseError{Thread: "claim", Owner: "a",
		Holder: ledger.Lease{Owner: "b", Acquired: t0, Expires: t0.Add(leaseTTL)}}, "")

	read = b.Version()
	if err := b.RenewLease(ctx, "b", t0.Add(time.Second), leaseTTL); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "claim at the version before its own renewal", b.AppendAt(read, ledger.RoleTool, claim), ledger.ErrConflict)
	if got := Load(t, open(t), "claim"); got.Len() != 3 {
		t.Fatalf("a refused claim was stored: %s", Roles(got.Turns()))
	}
	if err := b.AppendAt(b.Version(), ledger.RoleTool, claim); err != nil {
		t.Fatalf("claim at the current version: %v", err)
	}
	if got := Load(t, open(t), "claim"); got.Len() != 4 || got.Version() != b.Version() {
		t.Fatalf("stored %d turns at version %d, want 4 at %d", got.Len(), got.Version(), b.Version())
	}
}

// race runs try on every thread at once, as rival processes would, and
// returns the index of the one that succeeded. The test fails unless
// exactly one did and every other met ledger.ErrConflict; what names the
// round in the failure. Rival i is named ri.
func race(t *testing.T, what string, threads []*ledger.StoredThread, try func(i int, st *ledger.StoredThread) error) int {
	t.Helper()
	errs := make([]error, len(threads))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, st := range threads {
		wg.Go(func() {
			<-start
			errs[i] = try(i, st)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Fatalf("%s: r%d and r%d both succeeded", what, winner, i)
		case !errors.Is(err, ledger.ErrConflict):
			t.Fatalf("%s: r%d: %v, want ledger.ErrConflict", what, i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: nobody succeeded: %v", what, errs)
	}
	return winner
}
