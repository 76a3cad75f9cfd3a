package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/lodeworks/lode/ledger"
)

// t0 is the lease tests' injected clock at its start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const leaseTTL = 10 * time.Second

func acquireOK(t testing.TB, st *ledger.StoredThread, owner string, now time.Time) ledger.Lease {
	t.Helper()
	prev, err := st.AcquireLease(context.Background(), owner, now, leaseTTL)
	if err != nil {
		t.Fatalf("%s acquires at %s: %v", owner, now.Format(time.TimeOnly), err)
	}
	return prev
}

func leaseOf(t testing.TB, st *ledger.StoredThread) ledger.Lease {
	t.Helper()
	l, err := st.Lease()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// wantLeaseError checks that err is a *ledger.LeaseError with these
// fields that matches both ledger.ErrLeased and ledger.ErrConflict.
func wantLeaseError(t testing.TB, what string, err error, want ledger.LeaseError, msg string) {
	t.Helper()
	var le *ledger.LeaseError
	if !errors.As(err, &le) || !errors.Is(err, ledger.ErrLeased) || !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("%s: %v, want a *ledger.LeaseError matching ErrLeased and ErrConflict", what, err)
	}
	if le.Thread != want.Thread || le.Owner != want.Owner || !le.Holder.Expires.Equal(want.Holder.Expires) ||
		le.Holder.Owner != want.Holder.Owner || !le.Holder.Acquired.Equal(want.Holder.Acquired) || le.Lost != want.Lost || (le.Err != nil) != (want.Err != nil) {
		t.Fatalf("%s: %+v, want %+v", what, *le, want)
	}
	if msg != "" && err.Error() != msg {
		t.Fatalf("%s: message\n%s\nwant\n%s", what, err, msg)
	}
}

func sameLease(a, b ledger.Lease) bool {
	return a.Owner == b.Owner && a.Acquired.Equal(b.Acquired) && a.Expires.Equal(b.Expires)
}

func testLeaseAcquire(t *testing.T, open Opener) {
	s := open(t)
	st := Create(t, s, ledger.WithID("lease"))
	Append(t, st, ledger.RoleUser, Text("hi"))
	if l := leaseOf(t, st); l != (ledger.Lease{}) || l.Live(t0) {
		t.Fatalf("a new thread has lease %+v", l)
	}
	v := st.Version()
	if prev := acquireOK(t, st, "a", t0); prev != (ledger.Lease{}) {
		t.Fatalf("first acquire replaced %+v", prev)
	}
	want := ledger.Lease{Owner: "a", Acquired: t0, Expires: t0.Add(leaseTTL)}
	if got := leaseOf(t, st); !sameLease(got, want) || st.Version() != v+1 {
		t.Fatalf("lease %+v at version %d, want %+v at %d", got, st.Version(), want, v+1)
	}
	if !want.Live(t0) || !want.Live(t0.Add(leaseTTL-1)) || want.Live(t0.Add(leaseTTL)) {
		t.Fatal("Live is wrong at the edges")
	}
	// Durable, and in the metadata every store lists; it is not a turn.
	other := Load(t, open(t), "lease")
	if got := leaseOf(t, other); !sameLease(got, want) || other.Version() != v+1 || other.Len() != 1 {
		t.Fatalf("reloaded: lease %+v, version %d, %d turns", got, other.Version(), other.Len())
	}
	for info, err := range open(t).List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := info.Metadata[ledger.LeaseKey]; info.Turns != 1 || !ok {
			t.Fatalf("listed %d turns, metadata %v", info.Turns, info.Metadata)
		}
	}
	// The holder acquiring again refreshes: later expiry, same start.
	later := t0.Add(4 * time.Second)
	if prev := acquireOK(t, st, "a", later); !sameLease(prev, want) {
		t.Fatalf("refresh replaced %+v", prev)
	}
	if got := leaseOf(t, st); !sameLease(got, ledger.Lease{Owner: "a", Acquired: t0, Expires: later.Add(leaseTTL)}) {
		t.Fatalf("refreshed lease %+v", got)
	}
	// Appends go on at the versions the lease records moved to.
	Append(t, st, ledger.RoleAssistant, Text("hello"))
	if got := Load(t, open(t), "lease"); got.Len() != 2 || got.Version() != st.Version() {
		t.Fatalf("after lease and append: %d turns at version %d, want 2 at %d", got.Len(), got.Version(), st.Version())
	}
}

func testLeaseLive(t *testing.T, open Opener) {
	s := open(t)
	a := Create(t, s, ledger.WithID("live"))
	acquireOK(t, a, "a", t0)
	b := Load(t, open(t), "live")
	v := b.Version()
	holder := ledger.Lease{Owner: "a", Acquired: t0, Expires: t0.Add(leaseTTL)}
	_, err := b.AcquireLease(context.Background(), "b", t0.Add(leaseTTL-time.Nanosecond), leaseTTL)
	wantLeaseError(t, "acquire under a live lease", err, ledger.LeaseError{Thread: "live", Owner: "b", Holder: holder},
		"ledger: thread live is leased to a since 2026-03-01T12:00:00Z, until 2026-03-01T12:00:10Z; wait for it to finish or for the lease to expire")
	if b.Version() != v || !sameLease(leaseOf(t, Load(t, open(t), "live")), holder) {
		t.Fatal("a refused acquire changed the thread")
	}
	// A renewal or release by someone who never held it is refused too.
	err = b.RenewLease(context.Background(), "b", t0, leaseTTL)
	wantLeaseError(t, "renew by a stranger", err, ledger.LeaseError{Thread: "live", Owner: "b", Holder: holder, Lost: true}, "")
	err = b.ReleaseLease(context.Background(), "b")
	wantLeaseError(t, "release by a stranger", err, ledger.LeaseError{Thread: "live", Owner: "b", Holder: holder, Lost: true}, "")
	if b.Version() != v {
		t.Fatal("a refused renewal or release wrote something")
	}
}

func testLeaseTakeover(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	a := Create(t, s, ledger.WithID("takeover"))
	acquireOK(t, a, "a", t0)
	old := leaseOf(t, a)
	b := Load(t, open(t), "takeover")
	expired := t0.Add(leaseTTL) // expiry itself: no longer live
	if prev := acquireOK(t, b, "b", expired); !sameLease(prev, old) {
		t.Fatalf("takeover replaced %+v, want %+v", prev, old)
	}
	holder := ledger.Lease{Owner: "b", Acquired: expired, Expires: expired.Add(leaseTTL)}
	// a does not know yet: its renewal meets the changed thread.
	err := a.RenewLease(ctx, "a", expired, leaseTTL)
	wantLeaseError(t, "renew after takeover, stale", err, ledger.LeaseError{Thread: "takeover", Owner: "a", Lost: true, Err: ledger.ErrConflict}, "")
	if err := a.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	err = a.RenewLease(ctx, "a", expired, leaseTTL)
	wantLeaseError(t, "renew after takeover", err, ledger.LeaseError{Thread: "takeover", Owner: "a", Holder: holder, Lost: true},
		"ledger: lease on thread takeover by a was lost: b holds it since 2026-03-01T12:00:10Z, until 2026-03-01T12:00:20Z")
	err = a.ReleaseLease(ctx, "a")
	wantLeaseError(t, "release after takeover", err, ledger.LeaseError{Thread: "takeover", Owner: "a", Holder: holder, Lost: true}, "")
	// Nor can a take it back while b's lease is live.
	_, err = a.AcquireLease(ctx, "a", expired.Add(time.Second), leaseTTL)
	wantLeaseError(t, "take back", err, ledger.LeaseError{Thread: "takeover", Owner: "a", Holder: holder}, "")
	if got := leaseOf(t, Load(t, open(t), "takeover")); !sameLease(got, holder) {
		t.Fatalf("stored lease %+v, want %+v", got, holder)
	}
}

func testLeaseRace(t *testing.T, open Opener) {
	const racers = 4
	for round := range 3 {
		id := "race" + string(rune('a'+round))
		Create(t, open(t), ledger.WithID(id))
		threads := make([]*ledger.StoredThread, racers)
		for i := range threads {
			threads[i] = Load(t, open(t), id) // each as its own process would
		}
		owners := []string{"r0", "r1", "r2", "r3"}
		winner := race(t, fmt.Sprint("round ", round), threads, func(i int, st *ledger.StoredThread) error {
			_, err := st.AcquireLease(context.Background(), owners[i], t0, leaseTTL)
			return err
		})
		want := ledger.Lease{Owner: owners[winner], Acquired: t0, Expires: t0.Add(leaseTTL)}
		if got := leaseOf(t, Load(t, open(t), id)); !sameLease(got, want) {
			t.Fatalf("round %d: stored %+v, want %+v", round, got, want)
		}
		// A loser that reloads sees the winner and is refused with its name.
		loser := threads[(winner+1)%racers]
		if err := loser.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, err := loser.AcquireLease(context.Background(), "late", t0.Add(time.Second), leaseTTL)
		wantLeaseError(t, "loser after reload", err, ledger.LeaseError{Thread: id, Owner: "late", Holder: want}, "")
	}
}

func testLeaseRenewRelease(t *testing.T, open Opener) {
	ctx := context.Background()
	st := Create(t, open(t), ledger.WithID("renew"))
	acquireOK(t, st, "a", t0)
	v := st.Version()
	if err := st.RenewLease(ctx, "a", t0.Add(3*time.Second), leaseTTL); err != nil {
		t.Fatal(err)
	}
	// Each renewal is one record.
	if got := leaseOf(t, st); !sameLease(got, ledger.Lease{Owner: "a", Acquired: t0, Expires: t0.Add(13 * time.Second)}) || st.Version() != v+1 {
		t.Fatalf("renewed %+v at version %d", got, st.Version())
	}
	// Expired but nobody took it: the compare-and-swap shows nobody wrote,
	// so the holder may renew.
	late := t0.Add(time.Minute)
	if err := st.RenewLease(ctx, "a", late, leaseTTL); err != nil {
		t.Fatalf("renew an expired lease nobody took: %v", err)
	}
	if got := leaseOf(t, Load(t, open(t), "renew")); !sameLease(got, ledger.Lease{Owner: "a", Acquired: t0, Expires: late.Add(leaseTTL)}) {
		t.Fatalf("stored %+v", got)
	}
	if err := st.ReleaseLease(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if l := leaseOf(t, st); l != (ledger.Lease{}) {
		t.Fatalf("released lease reads %+v", l)
	}
	v = st.Version()
	if err := st.ReleaseLease(ctx, "a"); err != nil || st.Version() != v {
		t.Fatalf("second release: %v, version %d, want nil at %d", err, st.Version(), v)
	}
	err := st.RenewLease(ctx, "a", late, leaseTTL)
	wantLeaseError(t, "renew after release", err, ledger.LeaseError{Thread: "renew", Owner: "a", Lost: true},
		"ledger: lease on thread renew by a was lost: the thread has no lease now")
	// After a release anyone acquires at once, with nothing to take over.
	other := Load(t, open(t), "renew")
	if prev := acquireOK(t, other, "b", late); prev != (ledger.Lease{}) {
		t.Fatalf("acquire after release replaced %+v", prev)
	}
}

func testLeaseBadInput(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	st := Create(t, s, ledger.WithID("bad"))
	v := st.Version()
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"acquire without owner", func() error { _, err := st.AcquireLease(ctx, "", t0, leaseTTL); return err }(),
			`ledger: acquire lease on thread bad: owner "", ttl 10s: want a non-empty owner and a positive ttl`},
		{"acquire zero ttl", func() error { _, err := st.AcquireLease(ctx, "a", t0, 0); return err }(),
			`ledger: acquire lease on thread bad: owner "a", ttl 0s: want a non-empty owner and a positive ttl`},
		{"acquire negative ttl", func() error { _, err := st.AcquireLease(ctx, "a", t0, -time.Second); return err }(),
			`ledger: acquire lease on thread bad: owner "a", ttl -1s: want a non-empty owner and a positive ttl`},
		{"renew without owner", st.RenewLease(ctx, "", t0, leaseTTL),
			`ledger: renew lease on thread bad: owner "", ttl 10s: want a non-empty owner and a positive ttl`},
		{"renew zero ttl", st.RenewLease(ctx, "a", t0, 0),
			`ledger: renew lease on thread bad: owner "a", ttl 0s: want a non-empty owner and a positive ttl`},
		{"set the reserved key", st.SetMetadata(ledger.LeaseKey, `{"owner":"me"}`),
			`ledger: set metadata "lode.lease" on thread bad: the key is reserved for the thread's lease; use AcquireLease, RenewLease or ReleaseLease`},
	}
	for _, c := range cases {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("%s: %v, want %s", c.name, c.err, c.want)
		}
	}
	if st.Version() != v {
		t.Fatal("bad input wrote something")
	}

	// A value under the key that is no lease is damage, never taken over.
	dam := Create(t, s, ledger.WithID("damaged"), ledger.WithMetadata(map[string]string{ledger.LeaseKey: "not json"}))
	_, err := dam.Lease()
	if !errors.Is(err, ledger.ErrCorrupt) || err.Error() != `ledger: thread damaged: metadata "lode.lease" holds "not json", not a lease: corrupt` {
		t.Fatalf("read a damaged lease: %v", err)
	}
	_, err = dam.AcquireLease(ctx, "a", t0, leaseTTL)
	if !errors.Is(err, ledger.ErrCorrupt) || errors.Is(err, ledger.ErrLeased) {
		t.Fatalf("acquire over a damaged lease: %v", err)
	}
	if got := Load(t, open(t), "damaged").AllMetadata(); !reflect.DeepEqual(got, map[string]string{ledger.LeaseKey: "not json"}) {
		t.Fatalf("a damaged lease was overwritten: %v", got)
	}

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = st.AcquireLease(ctx, "a", t0, leaseTTL)
	wantErr(t, "acquire on closed", err, ledger.ErrClosed)
	wantErr(t, "renew on closed", st.RenewLease(ctx, "a", t0, leaseTTL), ledger.ErrClosed)
	wantErr(t, "release on closed", st.ReleaseLease(ctx, "a"), ledger.ErrClosed)

}
