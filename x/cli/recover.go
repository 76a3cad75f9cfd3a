package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// DefaultWorkerEvery is how often lode worker looks for stopped runs when
// --every is not given.
const DefaultWorkerEvery = 10 * time.Second

// recoverNotes is the part of lode recover's and lode worker's help that
// says what they do.
const recoverNotes = `A run whose process died (kill -9, a crash, a redeploy) leaves its thread's
lease unreleased. Once the lease has expired (lease: in lode.yaml, 30s by
default) lode recover takes it over and finishes the run: a tool call that had
started and has no result gets an "interrupted" error result (a tool marked
idempotent runs again), a model answer that never landed is asked for again,
and calls that wait for approval keep waiting, unless --approval-expiry (or
approval_expiry: in lode.yaml) has passed: then they are denied, and the model
reads why. Two recoverers never continue one thread. lode worker does the same
every --every until Ctrl-C or SIGTERM, which stop it after the run in hand.

Exit codes: lode recover: 0 every run it found finished (or none was found);
1 a run or the store failed; 2 a mistake in the command line; 3 a run paused
for approval (the lode resume commands are printed). lode worker: 0 when a
signal stops it; 1 when it cannot start; 2 a mistake in the command line. It
reports each run on stderr and goes on.
`

// recoverOptions are the flags of lode recover and lode worker beyond an
// agent's.
type recoverOptions struct {
	options
	every time.Duration
}

func (o *recoverOptions) register(fs *flag.FlagSet, worker bool) {
	o.options.register(fs)
	fs.DurationVar(&o.approvalExpiry, "approval-expiry", 0, "deny calls that have waited this long for approval (e.g. 24h); 0 means approval_expiry in lode.yaml, or wait for ever")
	if worker {
		fs.DurationVar(&o.every, "every", 0, fmt.Sprintf("how often to look for stopped runs; 0 means %s", DefaultWorkerEvery))
	}
}

// prepare checks the flags and the ledger, and builds the agent that
// continues the runs, through openDoor as every other door.
func (o *recoverOptions) prepare(ctx context.Context, e env, cmd string, rest []string) (*agent, ledger.Store, string, error) {
	if len(rest) > 0 {
		return nil, nil, "", usageError{fmt.Sprintf("%s takes no arguments, got %q", cmd, rest)}
	}
	if o.approvalExpiry < 0 {
		return nil, nil, "", usageError{fmt.Sprintf("--approval-expiry %s: must not be negative (0 means approval_expiry in lode.yaml, or wait for ever)", o.approvalExpiry)}
	}
	if o.every < 0 {
		return nil, nil, "", usageError{fmt.Sprintf("--every %s: must not be negative (0 means %s)", o.every, DefaultWorkerEvery)}
	}
	cfg, err := o.load(e)
	if err != nil {
		return nil, nil, "", err
	}
	if o.store == "" && cfg.Store == "" {
		return nil, nil, "", usageError{cmd + " needs the ledger the runs used: --store DIR, or store: in lode.yaml"}
	}
	a, err := newAgent(ctx, e, &o.options)
	if err != nil {
		return nil, nil, "", err
	}
	s, err := openStore(ctx, a.store)
	if err != nil {
		a.close()
		return nil, nil, "", err
	}
	return a, s, a.store, nil
}

// cmdRecover continues, once, every run of the ledger whose process died.
func cmdRecover(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode recover", flag.ContinueOnError)
	var o recoverOptions
	o.register(fs, false)
	describe(fs, "lode recover [flags] --store DIR", recoverNotes)
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	a, s, dir, err := o.prepare(ctx, e, "lode recover", rest)
	if err != nil {
		return err
	}
	defer a.close()
	defer s.Close()
	ctx, stop := interruptible(ctx, e)
	defer stop()
	return recoverPass(ctx, e, a, s, o.resumeCmd(dir))
}

// cmdWorker recovers stopped runs every --every until a signal stops it.
func cmdWorker(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode worker", flag.ContinueOnError)
	var o recoverOptions
	o.register(fs, true)
	var tf temporalFlags
	tf.register(fs)
	describe(fs, "lode worker [flags] --store DIR [--every 10s]   (or lode worker [flags] --temporal HOST:PORT)", recoverNotes+"\n"+temporalNotes)
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	if onTemporal, err := tf.check(e); err != nil || onTemporal {
		if err != nil {
			return err
		}
		return workerOnTemporal(ctx, e, &o, &tf, rest)
	}
	a, s, dir, err := o.prepare(ctx, e, "lode worker", rest)
	if err != nil {
		return err
	}
	defer a.close()
	defer s.Close()
	every := o.every
	if every == 0 {
		every = DefaultWorkerEvery
	}
	// Ctrl-C and SIGTERM both stop the worker cleanly: the run in hand is
	// cancelled, its lease released, and the next worker finishes it.
	ctx, stop := interruptible(ctx, e)
	defer stop()
	fmt.Fprintf(e.stderr, "lode worker: recovering stopped runs in %s every %s\n", storeName(dir), every)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := recoverPass(ctx, e, a, s, o.resumeCmd(dir)); err != nil && ctx.Err() == nil {
			var pe pausedErr
			if !errors.As(err, &pe) {
				fmt.Fprintln(e.stderr, "lode worker: "+oneLine(err.Error()))
			}
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(e.stderr, "lode worker: stopped")
			return nil
		case <-tick.C:
		}
	}
}

// recoverPass runs one Recover over s and reports each run on stderr. It
// fails when a run or the store failed, and otherwise with a pausedErr
// when a run paused for approval.
func recoverPass(ctx context.Context, e env, a *agent, s ledger.Store, rc resumeCmd) error {
	recs, err := a.step.Recover(ctx, s, a.prov)
	_ = a.step.Flush(context.WithoutCancel(ctx))
	a.printer.endLine()
	var failed, paused []string
	for _, r := range recs {
		fmt.Fprintln(e.stderr, describeRecovery(r))
		var pe *loop.PendingError
		switch {
		case r.Err == nil:
		case errors.As(r.Err, &pe):
			listPending(e.stderr, pe.Thread, pe.Calls, rc)
			paused = append(paused, r.Thread)
		default:
			fmt.Fprintf(e.stderr, "thread %s: %s\n", r.Thread, oneLine(explain(r.Err, a.cfg, a.baseURL).Error()))
			failed = append(failed, r.Thread)
		}
	}
	switch {
	case err != nil:
		return err
	case len(failed) > 0:
		return fmt.Errorf("%d recovered run(s) failed: %s", len(failed), strings.Join(failed, ", "))
	case len(paused) > 0:
		return pausedErr{fmt.Sprintf("%d recovered run(s) wait for approval: %s", len(paused), strings.Join(paused, ", "))}
	case len(recs) == 0:
		fmt.Fprintln(e.stderr, "no stopped runs to recover")
	}
	return nil
}

// describeRecovery is one line saying which run was taken over, from
// where, after whom.
func describeRecovery(r loop.Recovery) string {
	var b strings.Builder
	fmt.Fprintf(&b, "recovered thread %s at turn %d", r.Thread, r.Turn)
	switch r.From {
	case loop.RecoverTurn:
		b.WriteString(": the model is asked again")
	case loop.RecoverCalls:
		fmt.Fprintf(&b, ": calls %s had no result", strings.Join(r.Calls, ", "))
		if len(r.Rerun) > 0 {
			fmt.Fprintf(&b, " (run again, idempotent: %s)", strings.Join(r.Rerun, ", "))
		}
	case loop.RecoverApproval:
		fmt.Fprintf(&b, ": calls %s waited too long for approval and were denied", strings.Join(r.Calls, ", "))
	case loop.RecoverPending:
		b.WriteString(": calls still wait for approval")
	case loop.RecoverDone:
		b.WriteString(": the run had finished; its lease is released")
	}
	if r.PreviousOwner != "" {
		fmt.Fprintf(&b, "; taken over from %s", r.PreviousOwner)
	}
	fmt.Fprintf(&b, " by %s", r.Owner)
	return b.String()
}
