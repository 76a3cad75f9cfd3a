package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/lodeworks/lode/ledger"
)

// DefaultLeaseTTL is how long a lease taken by Run or Resume lasts without
// renewal when WithLease is not given.
const DefaultLeaseTTL = 30 * time.Second

// leaseConfig is how a Step leases the stored threads it works on.
type leaseConfig struct {
	ttl    time.Duration
	prefix string
	now    func() time.Time
}

// WithLease sets how long the lease that Run and Resume hold on a
// ledger.StoredThread lasts without renewal; while they work they renew it
// every ttl/3. A process that dies keeps others off the thread for at most
// ttl. 0 means DefaultLeaseTTL. A negative ttl turns leases off: only the
// claim's compare-and-swap guards a resume, so a second resumer started
// while the first is inside an approved call takes that call for
// interrupted.
func WithLease(ttl time.Duration) Option { return func(s *Step) { s.lease.ttl = ttl } }

// WithLeaseOwner puts prefix before the owner ID of each lease (host, pid
// and a random part, new for every Run and Resume), so that an operator
// reading a *ledger.LeaseError sees which service holds a thread. Empty
// means no prefix.
func WithLeaseOwner(prefix string) Option { return func(s *Step) { s.lease.prefix = prefix } }

// WithClock sets the clock that dates leases: when one is taken, when it
// expires, and so whether another owner's lease is still live. nil means
// time.Now. Renewals are paced by real time whatever the clock says.
func WithClock(now func() time.Time) Option { return func(s *Step) { s.lease.now = now } }

func (s *Step) now() time.Time {
	if s.lease.now != nil {
		return s.lease.now()
	}
	return time.Now()
}

func (s *Step) leaseTTL() time.Duration {
	if s.lease.ttl == 0 {
		return DefaultLeaseTTL
	}
	return s.lease.ttl
}

// hostPID is this process's part of every owner ID; looked up once, since
// neither changes while the process runs.
var hostPID = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s/%d", host, os.Getpid())
})

// leaseOwner names the owner of one Run or Resume.
func (s *Step) leaseOwner() string {
	id := hostPID() + "/" + ledger.NewID()[:12]
	if s.lease.prefix != "" {
		id = s.lease.prefix + "/" + id
	}
	return id
}

// leaser is a State that can hold a lease: a ledger.StoredThread.
type leaser interface {
	AcquireLease(ctx context.Context, owner string, now time.Time, ttl time.Duration) (ledger.Lease, error)
	RenewLease(ctx context.Context, owner string, now time.Time, ttl time.Duration) error
	ReleaseLease(ctx context.Context, owner string) error
}

// heldLease is the lease of one Run or Resume. A nil *heldLease (a State
// that takes no lease, or leases turned off) does nothing.
type heldLease struct {
	s       *Step
	st      leaser
	owner   string
	ttl     time.Duration
	expires time.Time

	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}
	lost   error // set by the renewer before it closes done
}

// acquireLease takes st's lease before anything is read or claimed, so
// that no one can see an approved, unanswered call without also seeing
// the live lease of whoever is running it.
func (s *Step) acquireLease(ctx context.Context, st any) (*heldLease, error) {
	ls, ok := st.(leaser)
	if !ok || s.lease.ttl < 0 {
		return nil, nil
	}
	h := &heldLease{s: s, st: ls, owner: s.leaseOwner(), ttl: s.leaseTTL()}
	now := s.now()
	prev, err := ls.AcquireLease(ctx, h.owner, now, h.ttl)
	if err != nil {
		return nil, &LedgerError{Err: err}
	}
	h.expires = now.Add(h.ttl)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("lode.lease.owner", h.owner))
		if prev.Owner != "" && prev.Owner != h.owner {
			span.AddEvent("lode.lease.takeover", trace.WithAttributes(
				attribute.String("lode.lease.previous_owner", prev.Owner),
				attribute.String("lode.lease.previous_acquired", prev.Acquired.UTC().Format(time.RFC3339Nano)),
				attribute.String("lode.lease.expired_at", prev.Expires.UTC().Format(time.RFC3339Nano)),
			))
		}
	}
	return h, nil
}

// start renews the lease every ttl/3 until end, and returns the context
// the work runs in: cancelled, with the *ledger.LeaseError as its cause,
// once the lease is lost.
func (h *heldLease) start(ctx context.Context) context.Context {
	if h == nil {
		return ctx
	}
	ctx, h.cancel = context.WithCancelCause(ctx)
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	every := max(h.ttl/3, time.Millisecond)
	go h.renew(ctx, every)
	return ctx
}

func (h *heldLease) renew(ctx context.Context, every time.Duration) {
	defer close(h.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		now := h.s.now()
		err := h.st.RenewLease(ctx, h.owner, now, h.ttl)
		if err == nil {
			h.expires = now.Add(h.ttl)
			continue
		}
		// A store that fails for a while is tried again, until the lease
		// it last renewed would have expired: from then on another owner
		// may take it over, and this one must stop.
		if errors.Is(err, ledger.ErrLeased) || !now.Before(h.expires) {
			h.lost = err
			h.cancel(err)
			return
		}
		h.s.log().WarnContext(ctx, "lode: lease renewal failed; retrying", "owner", h.owner, "expires", h.expires, "err", err)
	}
}

// drop stops renewing and leaves the lease to expire, so that another
// owner takes the work over then; err is the work's outcome, replaced by a
// lost lease as in end.
func (h *heldLease) drop(ctx context.Context, err error) error {
	if h == nil {
		return err
	}
	if lerr := h.stopRenewing(ctx); lerr != nil {
		return lerr
	}
	return err
}

// stopRenewing stops the renewals and returns, as a reported
// *LedgerError, the lease's loss if it was lost while they ran.
func (h *heldLease) stopRenewing(ctx context.Context) error {
	if h.stop != nil {
		close(h.stop)
		<-h.done
		h.cancel(nil)
	}
	if h.lost == nil {
		return nil
	}
	lerr := &LedgerError{Err: h.lost}
	h.s.notify(ctx, ErrorEvent{Err: lerr})
	return lerr
}

// end stops renewing and releases the lease. err is the work's outcome;
// a lease lost while it ran replaces it, since the work was cancelled and
// another owner may now be on the thread.
func (h *heldLease) end(ctx context.Context, err error) error {
	if h == nil {
		return err
	}
	if lerr := h.stopRenewing(ctx); lerr != nil {
		return lerr
	}
	if rerr := h.st.ReleaseLease(context.WithoutCancel(ctx), h.owner); rerr != nil {
		h.s.log().WarnContext(ctx, "lode: lease not released; it lapses when it expires", "owner", h.owner, "expires", h.expires, "err", rerr)
	}
	return err
}
