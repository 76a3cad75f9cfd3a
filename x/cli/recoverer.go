package cli

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// recoverer is lode recover's and lode worker's: it continues the stopped
// runs of a store, each with the model its thread remembers (flags first,
// then the thread, then the environment and lode.yaml, as lode resume
// does), building one agent per model when a thread needs it.
type recoverer struct {
	e      env
	o      *options
	store  ledger.Store
	dir    string
	expiry time.Duration
	// agents by the model they ask, as modelOf reads their configuration.
	agents map[modelMemory]*agent
}

func (r *recoverer) close() {
	for _, a := range r.agents {
		a.close()
	}
	_ = r.store.Close()
}

// agentFor is the agent that continues a thread remembering m.
func (r *recoverer) agentFor(ctx context.Context, m modelMemory) (*agent, error) {
	o := *r.o
	o.thread = m
	cfg, err := o.load(r.e)
	if err != nil {
		return nil, err
	}
	key := modelOf(cfg)
	if a, ok := r.agents[key]; ok {
		return a, nil
	}
	a, err := newAgent(ctx, r.e, &o)
	if err != nil {
		return nil, err
	}
	r.agents[key] = a
	return a, nil
}

// candidate says from a listing whether a thread may need continuing: its
// lease expired unreleased (the process died), lode marked its run stopped
// before the model answered (stoppedKey), or, with an approval expiry,
// calls may have waited too long. loop.Recover decides the first and the
// last for sure.
func (r *recoverer) candidate(info ledger.ThreadInfo, now time.Time) bool {
	if v := info.Metadata[ledger.LeaseKey]; v != "" {
		l, err := ledger.ParseLease(v)
		return err != nil || !l.Live(now)
	}
	if info.Metadata[stoppedKey] != "" {
		return true
	}
	return r.expiry > 0 && !info.Updated.IsZero() && now.Sub(info.Updated) >= r.expiry
}

// pass continues, once, every run of the store that stopped, and reports
// each on stderr. It fails when a run or the store failed, and otherwise
// with a pausedErr when a run paused for approval.
func (r *recoverer) pass(ctx context.Context) error {
	e := r.e
	rc := r.o.resumeCmd(r.dir)
	now := time.Now()
	groups := map[modelMemory][]ledger.ThreadInfo{}
	var order []modelMemory
	var errs []error
	for info, err := range r.store.List(ctx) {
		if err != nil {
			if info.ID == "" {
				errs = append(errs, err)
				break
			}
			// loop.Recover reports what it cannot read.
		} else if !r.candidate(info, now) {
			continue
		}
		m := rememberedInfo(info.Metadata)
		if _, seen := groups[m]; !seen {
			order = append(order, m)
		}
		groups[m] = append(groups[m], info)
	}
	var failed, paused []string
	found := 0
	report := func(a *agent, id string, err error) {
		var pe *loop.PendingError
		switch {
		case err == nil:
		case errors.As(err, &pe):
			listPending(e.stderr, pe.Thread, pe.Calls, rc)
			paused = append(paused, id)
		default:
			fmt.Fprintf(e.stderr, "thread %s: %s\n", id, oneLine(explain(err, a.cfg, a.baseURL).Error()))
			failed = append(failed, id)
		}
	}
	for _, m := range order {
		infos := groups[m]
		a, err := r.agentFor(ctx, m)
		if err != nil {
			for _, info := range infos {
				fmt.Fprintf(e.stderr, "thread %s: %s\n", info.ID, oneLine(err.Error()))
				failed = append(failed, info.ID)
			}
			continue
		}
		ids := map[string]bool{}
		for _, info := range infos {
			ids[info.ID] = true
		}
		recs, err := a.step.Recover(ctx, someThreads{r.store, ids}, a.prov)
		_ = a.step.Flush(context.WithoutCancel(ctx))
		a.printer.endLine()
		if err != nil {
			errs = append(errs, err)
		}
		done := map[string]bool{}
		for _, rec := range recs {
			found++
			done[rec.Thread] = true
			fmt.Fprintln(e.stderr, describeRecovery(rec))
			report(a, rec.Thread, rec.Err)
			if st, err := r.store.Load(context.WithoutCancel(ctx), rec.Thread); err == nil {
				noteStop(st, rec.Err)
				st.Close()
			}
		}
		// A run that stopped on an error released its lease: loop.Recover
		// does not see it, and it goes on here.
		for _, info := range infos {
			if done[info.ID] || info.Metadata[stoppedKey] == "" || info.Metadata[ledger.LeaseKey] != "" || ctx.Err() != nil {
				continue
			}
			ok, err := r.goOn(ctx, a, info)
			if ok {
				found++
				report(a, info.ID, err)
			}
		}
	}
	switch {
	case len(errs) > 0:
		return errors.Join(errs...)
	case len(failed) > 0:
		return fmt.Errorf("%s failed: %s", plural(len(failed), "recovered run"), strings.Join(failed, ", "))
	case len(paused) > 0:
		return pausedErr{fmt.Sprintf("%s %s for approval: %s", plural(len(paused), "recovered run"), agree(len(paused), "waits", "wait"), strings.Join(paused, ", "))}
	case found == 0:
		fmt.Fprintln(e.stderr, "no stopped runs to recover")
	}
	return nil
}

// goOn continues a thread whose run stopped before the model answered;
// ok says it did (another process may have taken it, or finished it).
func (r *recoverer) goOn(ctx context.Context, a *agent, info ledger.ThreadInfo) (ok bool, err error) {
	st, err := r.store.Load(ctx, info.ID)
	if err != nil {
		return false, nil // deleted, or loop.Recover reported it
	}
	defer st.Close()
	if !answerDue(st) {
		noteStop(st, nil) // answered since, by another door
		return false, nil
	}
	fmt.Fprintf(r.e.stderr, "recovered thread %s at turn %d: its run had stopped before the model answered (%s); the model is asked again\n", st.ID(), st.Len(), info.Metadata[stoppedKey])
	err = a.goOn(ctx, st)
	if errors.Is(err, ledger.ErrLeased) {
		fmt.Fprintf(r.e.stderr, "thread %s: another process took it over first\n", st.ID())
		return true, nil
	}
	return true, err
}

// someThreads is a store whose listing holds only the threads in ids.
type someThreads struct {
	ledger.Store
	ids map[string]bool
}

func (s someThreads) List(ctx context.Context) iter.Seq2[ledger.ThreadInfo, error] {
	return func(yield func(ledger.ThreadInfo, error) bool) {
		for info, err := range s.Store.List(ctx) {
			if info.ID != "" && !s.ids[info.ID] {
				continue
			}
			if !yield(info, err) {
				return
			}
		}
	}
}
