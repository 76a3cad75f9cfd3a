package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
)

const (
	leaseCrashEnv   = "LODE_LEDGERTEST_LEASE_CRASH"
	leaseChildOwner = "ledgertest-child"
)

// leaseChild is what one child is told, through StartChild.
type leaseChild struct {
	Where  string        // the storage
	Thread string        // the paused thread to claim
	Claim  bool          // claim both pending calls once leased
	Renew  bool          // then renew the lease without pause
	Skew   time.Duration // added to the child's lease clock
	TTL    time.Duration // the child's lease duration
}

// LeaseCrash checks that a lease and the claim made under it survive the
// SIGKILL of their owner, and that the dead owner's lease holds until it
// expires. The test binary re-runs itself (test named testName) as a
// child that loads a paused thread, takes its lease, claims its pending
// calls with AppendAt, and renews the lease as a working loop does; the
// parent kills it at fixed or random points. Then, through a new Store
// instance: the thread holds the claim whole or not at all, the lease is
// readable and still the child's, another owner is refused with a
// *ledger.LeaseError, a State read before the child began meets
// ErrConflict, and an owner whose clock is past the expiry takes the
// lease over and settles the calls.
//
// newStorage returns where fresh storage is (a directory, a file, a DSN);
// it runs in the parent only. open opens the store there, in parent and
// child. The test that calls LeaseCrash must call it first thing, since
// in the child LeaseCrash never returns.
func LeaseCrash(t *testing.T, testName string, newStorage func(t testing.TB) string, open func(where string) (ledger.Store, error)) {
	var c leaseChild
	if ChildConfig(leaseCrashEnv, testName, &c) {
		RunChild("lease crash child", func(say func(string)) error { return leaseCrashChild(open, c, say) })
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random kill points from seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	rounds := []struct {
		name  string
		child leaseChild
		// kill is the progress line after which the child is killed; 0
		// picks one of its first renewals at random.
		kill string
	}{
		{"killed after the lease", leaseChild{TTL: time.Hour}, "leased"},
		{"killed after the claim", leaseChild{TTL: time.Hour, Claim: true}, "claimed"},
		// A lease of a few milliseconds, renewed without pause, so that the
		// kill may land inside a renewal; the clock an hour ahead keeps it
		// live to this process.
		{"killed while renewing", leaseChild{TTL: 15 * time.Millisecond, Skew: time.Hour, Claim: true, Renew: true}, ""},
		{"killed while renewing again", leaseChild{TTL: 15 * time.Millisecond, Skew: time.Hour, Claim: true, Renew: true}, ""},
	}
	where := newStorage(t)
	opener := OpenerOf(where, open)
	for i, r := range rounds {
		t.Run(r.name, func(t *testing.T) {
			id := fmt.Sprintf("lease-crash-%d", i)
			pauseRecords(t, opener(t), id)
			stale := Load(t, opener(t), id) // read before the child began
			c := r.child
			c.Where, c.Thread = where, id
			p := StartChild(t, testName, leaseCrashEnv, c)
			if r.kill != "" {
				p.Await(t, func(line string) bool { return line == r.kill })
			} else {
				n, got := 1+rng.IntN(20), 0
				p.Await(t, func(line string) bool {
					if strings.HasPrefix(line, "renewed ") {
						got++
					}
					return got == n
				})
				t.Logf("killed after %d renewals", got)
			}
			p.Kill(t)
			afterLeaseCrash(t, opener, id, stale, c.Claim)
		})
	}
}

// afterLeaseCrash checks the thread a killed child leased, then takes it
// over and finishes it.
func afterLeaseCrash(t *testing.T, open Opener, id string, stale *ledger.StoredThread, claimed bool) {
	ctx := context.Background()
	st := Load(t, open(t), id)
	holder, err := st.Lease()
	if err != nil || holder.Owner != leaseChildOwner || !holder.Live(time.Now()) {
		t.Fatalf("the dead child's lease reads %+v, %v; want it live", holder, err)
	}
	switch {
	case st.Len() == 3 && !claimed:
	case st.Len() == 4 && claimed:
		want := []artifact.Artifact{
			artifact.Decision{ToolCallID: "c1", Name: "delete_file", Approved: true, By: leaseChildOwner},
			artifact.Decision{ToolCallID: "c3", Name: "delete_file", Approved: true, By: leaseChildOwner},
		}
		EqualTurns(t, st.Turns()[3:], []ledger.Turn{{Role: ledger.RoleTool, Time: st.Turns()[3].Time, Artifacts: want}})
	default:
		t.Fatalf("after the kill the thread holds %s (claimed: %v)", Roles(st.Turns()), claimed)
	}

	// The dead owner's lease holds until it expires.
	v := st.Version()
	_, err = st.AcquireLease(ctx, "parent", time.Now(), leaseTTL)
	var le *ledger.LeaseError
	if !errors.As(err, &le) || !errors.Is(err, ledger.ErrLeased) || le.Holder.Owner != leaseChildOwner || !le.Holder.Acquired.Equal(holder.Acquired) {
		t.Fatalf("acquire under the dead child's live lease: %v", err)
	}
	if st.Version() != v || Load(t, open(t), id).Version() != v {
		t.Fatal("a refused acquire wrote something")
	}
	// A State read before the child leased the thread meets the store's
	// compare-and-swap.
	wantErr(t, "claim on a state read before the child", stale.AppendAt(stale.Version(), ledger.RoleTool,
		artifact.Decision{ToolCallID: "c1", Name: "delete_file"}), ledger.ErrConflict)

	// Past the expiry: take over and settle the calls.
	prev, err := st.AcquireLease(ctx, "parent", AfterLeases(), leaseTTL)
	if err != nil || prev.Owner != leaseChildOwner || !prev.Acquired.Equal(holder.Acquired) {
		t.Fatalf("take over from the dead child: replaced %+v, %v", prev, err)
	}
	if claimed {
		// Approved and claimed, never answered: not run again.
		Append(t, st, ledger.RoleTool,
			artifact.ToolResult{ToolCallID: "c1", Name: "delete_file", IsError: true, Content: interrupted},
			artifact.ToolResult{ToolCallID: "c3", Name: "delete_file", IsError: true, Content: interrupted})
	} else {
		if err := st.AppendAt(st.Version(), ledger.RoleTool,
			artifact.Decision{ToolCallID: "c1", Name: "delete_file", Reason: "no"},
			artifact.ToolResult{ToolCallID: "c1", Name: "delete_file", IsError: true, Content: "denied"},
			artifact.Decision{ToolCallID: "c3", Name: "delete_file", Reason: "no"},
			artifact.ToolResult{ToolCallID: "c3", Name: "delete_file", IsError: true, Content: "denied"}); err != nil {
			t.Fatal(err)
		}
	}
	Append(t, st, ledger.RoleAssistant, Text("done"))
	if err := st.ReleaseLease(ctx, "parent"); err != nil {
		t.Fatal(err)
	}
	final := Load(t, open(t), id)
	EqualTurns(t, final.Turns(), st.Turns())
	if openIDs(final) != "" || leaseOf(t, final) != (ledger.Lease{}) {
		t.Fatalf("the finished thread: open calls %q, lease %+v", openIDs(final), leaseOf(t, final))
	}
}

func leaseCrashChild(open func(string) (ledger.Store, error), c leaseChild, say func(string)) error {
	ctx := context.Background()
	now := func() time.Time { return time.Now().Add(c.Skew) }
	s, err := open(c.Where)
	if err != nil {
		return err
	}
	st, err := s.Load(ctx, c.Thread)
	if err != nil {
		return err
	}
	if _, err := st.AcquireLease(ctx, leaseChildOwner, now(), c.TTL); err != nil {
		return err
	}
	say("leased")
	if c.Claim {
		if err := st.AppendAt(st.Version(), ledger.RoleTool,
			artifact.Decision{ToolCallID: "c1", Name: "delete_file", Approved: true, By: leaseChildOwner},
			artifact.Decision{ToolCallID: "c3", Name: "delete_file", Approved: true, By: leaseChildOwner}); err != nil {
			return err
		}
		say("claimed")
	}
	for i := 0; c.Renew; i++ {
		if err := st.RenewLease(ctx, leaseChildOwner, now(), c.TTL); err != nil {
			return err
		}
		say(fmt.Sprint("renewed ", i))
	}
	select {} // the parent kills us here
}
