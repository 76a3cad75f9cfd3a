package web

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// DefaultLease is how long the lease a turn holds on its thread lasts
// without renewal when WithLease is not given: loop's default.
const DefaultLease = loop.DefaultLeaseTTL

// WithLease sets how long the lease a turn holds on its stored thread
// lasts without renewal. A turn takes the lease before it writes
// anything, renews it every ttl/3 while it runs (one small write, however
// many tokens stream) and releases it when it ends, so that handlers in
// several processes over one store (lode web replicas over one
// PostgreSQL database) never run two turns on a thread at once. A process
// that dies keeps its threads from the others for at most ttl; then the
// next message or decision, on any of them, takes the thread over. 0
// means DefaultLease; a negative ttl is an error.
func WithLease(ttl time.Duration) Option {
	return func(c *config) {
		if ttl < 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: WithLease(%s): want 0 (default) or more", ErrOption, ttl))
		}
		c.lease = ttl
	}
}

// hostPID is this process's part of every lease owner.
var hostPID = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s/%d", host, os.Getpid())
})

// turnLease is the store lease of one turn on its thread.
type turnLease struct {
	h     *Handler
	id    string
	owner string

	mu      sync.Mutex
	st      *ledger.StoredThread // the thread the turn writes through
	expires time.Time
	lost    error // set once the lease was lost; nothing more is written

	stop chan struct{}
	done chan struct{}
}

// errBusyElsewhere is what acquire returns when another owner's lease on
// the thread is live.
type errBusyElsewhere struct{ holder ledger.Lease }

func (e errBusyElsewhere) Error() string { return "leased to " + e.holder.Owner }

// acquire takes st's lease for a new turn before anything is written.
// A State that fell behind the store is reloaded and the lease tried
// again; another owner's live lease is an errBusyElsewhere.
func (h *Handler) acquire(ctx context.Context, st *ledger.StoredThread) (*turnLease, error) {
	l := &turnLease{h: h, id: st.ID(), owner: "web/" + hostPID() + "/" + ledger.NewID()[:12], st: st}
	var err error
	for range 3 {
		now := time.Now()
		_, err = st.AcquireLease(ctx, l.owner, now, h.cfg.lease)
		if err == nil {
			l.expires = now.Add(h.cfg.lease)
			return l, nil
		}
		if le, ok := errors.AsType[*ledger.LeaseError](err); ok && le.Holder.Owner != "" {
			return nil, errBusyElsewhere{le.Holder}
		}
		if !errors.Is(err, ledger.ErrConflict) {
			return nil, err
		}
		if err = st.Reload(ctx); err != nil {
			return nil, err
		}
	}
	return nil, err
}

// start renews the lease every ttl/3 once ready is closed, until end;
// when the lease is lost it cancels the turn with the *ledger.LeaseError.
// Renewing waits for ready because a renewal moves the thread's version,
// which a Resume's claim of the decisions must find unchanged.
func (l *turnLease) start(ready <-chan struct{}, cancel context.CancelCauseFunc) {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		select {
		case <-ready:
		case <-l.stop:
			return
		}
		ttl := l.h.cfg.lease
		tick := time.NewTicker(max(ttl/3, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			now := time.Now()
			l.mu.Lock()
			st := l.st
			l.mu.Unlock()
			err := st.RenewLease(l.h.base, l.owner, now, ttl)
			if err == nil {
				l.mu.Lock()
				l.expires = now.Add(ttl)
				l.mu.Unlock()
				continue
			}
			l.mu.Lock()
			expired := !now.Before(l.expires)
			l.mu.Unlock()
			if errors.Is(err, ledger.ErrLeased) || expired {
				l.mu.Lock()
				l.lost = err
				l.mu.Unlock()
				l.h.cfg.logger.WarnContext(l.h.base, "lode: web lost the lease of a running turn; the turn is stopped", "thread", l.id, "owner", l.owner, "err", err)
				cancel(err)
				return
			}
			l.h.cfg.logger.WarnContext(l.h.base, "lode: web could not renew a turn's lease; retrying", "thread", l.id, "owner", l.owner, "expires", l.expires, "err", err)
		}
	}()
}

// isLost says the lease was lost: the turn must write nothing more.
func (l *turnLease) isLost() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost != nil
}

// end stops renewing and releases the lease, unless it was lost. A
// thread already closed (a request that failed half-way closed it) is
// loaded again to release it; one that is gone needs no release.
func (l *turnLease) end(ctx context.Context) {
	if l == nil {
		return
	}
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
	if l.isLost() {
		return
	}
	ctx = context.WithoutCancel(ctx)
	l.mu.Lock()
	st := l.st
	l.mu.Unlock()
	err := st.ReleaseLease(ctx, l.owner)
	if errors.Is(err, ledger.ErrClosed) {
		var fresh *ledger.StoredThread
		if fresh, err = l.h.store.Load(ctx, l.id); err == nil {
			err = fresh.ReleaseLease(ctx, l.owner)
			fresh.Close()
		}
	}
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		l.h.cfg.logger.WarnContext(ctx, "lode: web could not release a turn's lease; it lapses when it expires", "thread", l.id, "owner", l.owner, "err", err)
	}
}

// leasedElsewhere returns the live lease on st, conversation conv's
// branch, that no turn of this handler holds: a turn running in another
// process.
func (h *Handler) leasedElsewhere(conv string, st *ledger.StoredThread) (ledger.Lease, bool) {
	l, err := st.Lease()
	if err != nil || !l.Live(time.Now()) {
		return ledger.Lease{}, false
	}
	h.mu.Lock()
	run := h.turns[conv]
	h.mu.Unlock()
	if run != nil && run.lease != nil && run.lease.owner == l.Owner {
		return ledger.Lease{}, false
	}
	return l, true
}

// liveLease says whether metadata (a ThreadInfo's) holds a live lease.
func liveLease(meta map[string]string) bool {
	l, err := ledger.ParseLease(meta[ledger.LeaseKey])
	return err == nil && l.Live(time.Now())
}

// busyMessage is the 409 for a thread whose turn runs elsewhere.
func busyMessage(id string, l ledger.Lease) string {
	return fmt.Sprintf("web: a turn is running on thread %q on another server (%s holds its lease until %s): wait for it to end, or follow it with GET /api/chat/%s/stream",
		id, l.Owner, l.Expires.UTC().Format(time.RFC3339), id)
}

// followPoll is how often a follower reloads a thread whose turn runs
// elsewhere: a tenth of the lease, between 100ms and 1s.
func (h *Handler) followPoll() time.Duration {
	return min(max(h.cfg.lease/10, 100*time.Millisecond), time.Second)
}

// follow waits for the turn another process runs on st to end: until the
// lease is released, or lapses. It reloads st every followPoll and
// reports whether the turn ended before ctx did.
func (h *Handler) follow(ctx context.Context, conv string, st *ledger.StoredThread) bool {
	tick := time.NewTicker(h.followPoll())
	defer tick.Stop()
	for {
		if _, busy := h.leasedElsewhere(conv, st); !busy {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		if err := st.Reload(ctx); err != nil {
			if ctx.Err() == nil {
				h.cfg.logger.WarnContext(ctx, "lode: web could not reload a thread it follows", "thread", st.ID(), "err", err)
			}
			return false
		}
	}
}
