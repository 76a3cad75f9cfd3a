package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// LeaseKey is the metadata key under which a StoredThread keeps its lease.
// It is reserved: set it only through AcquireLease, RenewLease and
// ReleaseLease.
const LeaseKey = "lode.lease"

// ErrLeased: another owner holds a live lease on the thread, or the lease
// this owner held was lost. Every *LeaseError matches it, and ErrConflict
// too, so callers that retry on a conflict keep working.
var ErrLeased = errors.New("ledger: leased")

// Lease is who works on a stored thread, and until when. It lives in the
// thread's metadata under LeaseKey, so every Store keeps it, and it is
// changed only by a Journal commit at the version the State last saw: the
// store's compare-and-swap decides between owners racing for it.
//
// Expiry is judged by the clock of whoever reads the lease, so owners'
// clocks must agree to within a small part of the lease's duration.
type Lease struct {
	Owner    string    `json:"owner"`
	Acquired time.Time `json:"acquired"` // when Owner took it
	Expires  time.Time `json:"expires"`
}

// Live reports whether the lease still holds at now. The zero Lease is
// never live.
func (l Lease) Live(now time.Time) bool {
	return l.Owner != "" && now.Before(l.Expires)
}

// LeaseError reports a lease an owner could not take or keep: Holder is
// the lease in the way, the zero Lease when it is unknown (the stored
// thread changed since this State read it) or when there is none (it was
// released). It matches ErrLeased and ErrConflict.
type LeaseError struct {
	Thread string
	Owner  string // who asked
	Holder Lease
	// Lost is set when Owner held the lease and can no longer renew it.
	Lost bool
	// Err is the store's refusal, when the compare-and-swap failed.
	Err error
}

func (e *LeaseError) Error() string {
	var msg string
	switch {
	case e.Lost && e.Holder.Owner != "":
		msg = fmt.Sprintf("ledger: lease on thread %s by %s was lost: %s holds it since %s, until %s", e.Thread, e.Owner, e.Holder.Owner, stamp(e.Holder.Acquired), stamp(e.Holder.Expires))
	case e.Lost && e.Err != nil:
		msg = fmt.Sprintf("ledger: lease on thread %s by %s was lost: the stored thread changed since this State read it (another owner may have taken the lease over after it expired)", e.Thread, e.Owner)
	case e.Lost:
		msg = fmt.Sprintf("ledger: lease on thread %s by %s was lost: the thread has no lease now", e.Thread, e.Owner)
	default:
		msg = fmt.Sprintf("ledger: thread %s is leased to %s since %s, until %s; wait for it to finish or for the lease to expire", e.Thread, e.Holder.Owner, stamp(e.Holder.Acquired), stamp(e.Holder.Expires))
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrLeased, ErrConflict and Err.
func (e *LeaseError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrLeased, ErrConflict, e.Err}
	}
	return []error{ErrLeased, ErrConflict}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// parseLease reads a stored lease value; "" is no lease.
func parseLease(v string) (Lease, error) {
	if v == "" {
		return Lease{}, nil
	}
	var l Lease
	if err := json.Unmarshal([]byte(v), &l); err != nil || l.Owner == "" {
		return Lease{}, fmt.Errorf("metadata %q holds %q, not a lease: %w", LeaseKey, v, bare{ErrCorrupt})
	}
	return l, nil
}

// ParseLease reads a lease as stored under LeaseKey (ThreadInfo.Metadata
// carries it), so that a listing tells live leases from expired ones
// without loading each thread; "" is no lease, the zero Lease. A value
// that is not a lease fails with ErrCorrupt.
func ParseLease(v string) (Lease, error) {
	l, err := parseLease(v)
	if err != nil {
		return Lease{}, fmt.Errorf("ledger: %w", err)
	}
	return l, nil
}

func encodeLease(l Lease) string {
	b, _ := json.Marshal(Lease{Owner: l.Owner, Acquired: l.Acquired.UTC(), Expires: l.Expires.UTC()}) // strings and times always encode
	return string(b)
}

// Lease returns the thread's lease as this State last saw it; the zero
// Lease when there is none. A value under LeaseKey that is not a lease
// fails with ErrCorrupt.
func (t *StoredThread) Lease() (Lease, error) {
	t.mu.RLock()
	v := t.meta[LeaseKey]
	t.mu.RUnlock()
	l, err := parseLease(v)
	if err != nil {
		return Lease{}, fmt.Errorf("ledger: thread %s: %w", t.id, err)
	}
	return l, nil
}

// AcquireLease makes owner the thread's leaseholder from now until now+ttl
// and returns the lease it replaced (the zero Lease when there was none),
// so that a caller can report taking over from an expired owner. The lease
// is one metadata record committed at the version this State last saw, so
// of owners racing for it exactly one wins, in one process or many.
//
// It fails with a *LeaseError when another owner's lease is live at now
// (only an expired lease is taken over), and with an error matching
// ErrConflict when the stored thread changed since this State read it
// (Reload and try again: the State then shows the current holder). The
// owner who holds the lease acquiring again refreshes it, keeping its
// Acquired time. An empty owner or a ttl that is not positive is refused.
func (t *StoredThread) AcquireLease(ctx context.Context, owner string, now time.Time, ttl time.Duration) (Lease, error) {
	if owner == "" || ttl <= 0 {
		return Lease{}, fmt.Errorf("ledger: acquire lease on thread %s: owner %q, ttl %s: want a non-empty owner and a positive ttl", t.id, owner, ttl)
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	prev, version, err := t.leaseLocked("acquire")
	if err != nil {
		return Lease{}, err
	}
	next := Lease{Owner: owner, Acquired: now, Expires: now.Add(ttl)}
	if prev.Owner == owner {
		next.Acquired = prev.Acquired
	} else if prev.Live(now) {
		return Lease{}, &LeaseError{Thread: t.id, Owner: owner, Holder: prev}
	}
	if err := t.commitLease(ctx, version, next); err != nil {
		return Lease{}, fmt.Errorf("ledger: acquire lease on thread %s for %s: %w", t.id, owner, err)
	}
	return prev, nil
}

// RenewLease extends owner's lease to now+ttl. Each renewal is one small
// record in the thread's journal (one row in SQL stores), so a loop that
// renews every ttl/3 writes three records per ttl it works.
//
// It fails with a *LeaseError with Lost set when the lease is no longer
// owner's: this State shows another holder or none, or the stored thread
// changed since this State read it, which while the lease is held means
// another owner took it over after it expired. A lease that expired but
// that nobody took over is renewed: the compare-and-swap proves that
// nobody wrote in between.
func (t *StoredThread) RenewLease(ctx context.Context, owner string, now time.Time, ttl time.Duration) error {
	if owner == "" || ttl <= 0 {
		return fmt.Errorf("ledger: renew lease on thread %s: owner %q, ttl %s: want a non-empty owner and a positive ttl", t.id, owner, ttl)
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	cur, version, err := t.leaseLocked("renew")
	if err != nil {
		return err
	}
	if cur.Owner != owner {
		return &LeaseError{Thread: t.id, Owner: owner, Holder: cur, Lost: true}
	}
	cur.Expires = now.Add(ttl)
	if err := t.commitLease(ctx, version, cur); err != nil {
		if errors.Is(err, ErrConflict) {
			return &LeaseError{Thread: t.id, Owner: owner, Lost: true, Err: err}
		}
		return fmt.Errorf("ledger: renew lease on thread %s for %s: %w", t.id, owner, err)
	}
	return nil
}

// ReleaseLease ends owner's lease, so that the next owner need not wait
// for it to expire. Releasing when this State shows no lease writes
// nothing; when it shows another owner's, it fails with a *LeaseError
// with Lost set. A failed release leaves the lease to expire.
func (t *StoredThread) ReleaseLease(ctx context.Context, owner string) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	cur, version, err := t.leaseLocked("release")
	if err != nil {
		return err
	}
	if cur.Owner == "" {
		return nil
	}
	if cur.Owner != owner {
		return &LeaseError{Thread: t.id, Owner: owner, Holder: cur, Lost: true}
	}
	if err := t.commitMeta(ctx, version, LeaseKey, ""); err != nil {
		if errors.Is(err, ErrConflict) {
			return &LeaseError{Thread: t.id, Owner: owner, Lost: true, Err: err}
		}
		return fmt.Errorf("ledger: release lease on thread %s for %s: %w", t.id, owner, err)
	}
	return nil
}

// leaseLocked reads the lease and version under wmu.
func (t *StoredThread) leaseLocked(op string) (Lease, int64, error) {
	if t.closed {
		return Lease{}, 0, fmt.Errorf("ledger: %s lease on thread %s: %w", op, t.id, bare{ErrClosed})
	}
	t.mu.RLock()
	v, version := t.meta[LeaseKey], t.version
	t.mu.RUnlock()
	l, err := parseLease(v)
	if err != nil {
		return Lease{}, 0, fmt.Errorf("ledger: %s lease on thread %s: %w", op, t.id, err)
	}
	return l, version, nil
}

func (t *StoredThread) commitLease(ctx context.Context, version int64, l Lease) error {
	return t.commitMeta(ctx, version, LeaseKey, encodeLease(l))
}
