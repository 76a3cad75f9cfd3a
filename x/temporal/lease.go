package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// runPrefix is the part of every lease owner that names the workflow run
// the activity in ctx works for: the lease prefix (WithLeaseOwner), the
// workflow's ID and its run's ID. Outside an activity (a test calling an
// activity's method), a fresh prefix of its own.
func (a *Agent) runPrefix(ctx context.Context) string {
	if !activity.IsActivity(ctx) {
		return a.owner + "/" + ledger.NewID()[:12] + "/"
	}
	info := activity.GetInfo(ctx)
	return a.owner + "/" + info.WorkflowExecution.ID + "/" + info.WorkflowExecution.RunID + "/"
}

// turnOwner is the owner of the lease the calls of turn at take: every
// call of the turn, and every attempt at each, is the same owner, so that
// parallel calls share the lease.
func (a *Agent) turnOwner(ctx context.Context, at int) string {
	return a.runPrefix(ctx) + "turn-" + fmt.Sprint(at)
}

// modelOwner is the owner of the lease a model turn takes: the turn that
// follows turn after, in this run.
func (a *Agent) modelOwner(ctx context.Context, after int) string {
	return a.runPrefix(ctx) + "model-after-" + fmt.Sprint(after)
}

// take makes owner the thread's leaseholder for ttl. The lease of the
// same workflow run, whatever its activity, is taken over at once,
// live or not: that run schedules one step at a time (parallel calls
// share one owner), so a live lease of its own is one a worker that
// died left behind, and the attempt that retries the step must not wait
// for it to expire. Another run's live lease, or a loop run's, is a
// *ledger.LeaseError, as always; only an expired one is taken over. A
// lease owner already holds for long enough is not written again.
func (a *Agent) take(ctx context.Context, st *ledger.StoredThread, owner string, ttl time.Duration) error {
	prefix := a.runPrefix(ctx)
	err := again(ctx, st, func() error {
		now := time.Now()
		l, err := st.Lease()
		if err != nil {
			return err
		}
		if l.Owner == owner && !l.Expires.Before(now.Add(ttl)) {
			return nil
		}
		if l.Owner != owner && l.Live(now) && strings.HasPrefix(l.Owner, prefix) {
			// Ours, left by a dead attempt: release it as its owner, at
			// the version read, then take it.
			if err := st.ReleaseLease(ctx, l.Owner); err != nil {
				if errors.Is(err, ledger.ErrConflict) {
					// Changed since read: read again and decide again.
					return fmt.Errorf("release the lease of %s: %w", l.Owner, ledger.ErrConflict)
				}
				return err
			}
		}
		_, err = st.AcquireLease(ctx, owner, now, ttl)
		return err
	})
	if err != nil {
		return fmt.Errorf("temporal: thread %s: %w", st.ID(), err)
	}
	return nil
}

// lease takes the thread's lease for a call of turn at, so that lode
// recover and loop runs keep off the thread while a tool runs, for as
// long as the attempt may last.
func (a *Agent) lease(ctx context.Context, st *ledger.StoredThread, at int) (string, error) {
	owner := a.turnOwner(ctx, at)
	ttl := loop.DefaultLeaseTTL
	if activity.IsActivity(ctx) {
		if d := activity.GetInfo(ctx).StartToCloseTimeout; d > ttl {
			ttl = d
		}
	}
	return owner, a.take(ctx, st, owner, ttl)
}

// held is the lease a model turn holds while the model streams: taken
// for loop.DefaultLeaseTTL, renewed every third of it, released at the
// end. A renewal that finds the lease lost cancels the turn.
type held struct {
	st     *ledger.StoredThread
	owner  string
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}
}

// hold takes st's lease as owner and keeps it until end; the returned
// context is cancelled when the lease is lost.
func (a *Agent) hold(ctx context.Context, st *ledger.StoredThread, owner string) (context.Context, *held, error) {
	ttl := loop.DefaultLeaseTTL
	if err := a.take(ctx, st, owner, ttl); err != nil {
		return ctx, nil, err
	}
	h := &held{st: st, owner: owner, stop: make(chan struct{}), done: make(chan struct{})}
	ctx, h.cancel = context.WithCancelCause(ctx)
	go func() {
		defer close(h.done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		expires := time.Now().Add(ttl)
		for {
			select {
			case <-h.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := time.Now()
			err := st.RenewLease(ctx, owner, now, ttl)
			if err == nil {
				expires = now.Add(ttl)
				continue
			}
			if errors.Is(err, ledger.ErrLeased) || !now.Before(expires) {
				h.cancel(err)
				return
			}
		}
	}()
	return ctx, h, nil
}

// end stops renewing and releases the lease.
func (h *held) end(ctx context.Context) {
	close(h.stop)
	<-h.done
	h.cancel(nil)
	_ = h.st.ReleaseLease(context.WithoutCancel(ctx), h.owner)
}

// releaseDead releases the thread's lease when this workflow run's own
// call holds it: the call activity takes the lease while its tool runs,
// and a worker that died inside the tool never released it. Called once
// the call's attempts have ended for good, when no call of the run is in
// flight, so that the next model turn need not wait for the lease to
// expire (as long as the call's timeout).
func (a *Agent) releaseDead(ctx context.Context, st *ledger.StoredThread) {
	if !activity.IsActivity(ctx) {
		return
	}
	prefix := a.runPrefix(ctx)
	if l, err := st.Lease(); err == nil && strings.HasPrefix(l.Owner, prefix) {
		_ = st.ReleaseLease(ctx, l.Owner)
	}
}
