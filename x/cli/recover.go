package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/lodeworks/lode/loop"
)

// DefaultWorkerEvery is how often lode worker looks for stopped runs when
// --every is not given.
const DefaultWorkerEvery = 10 * time.Second

// recoverBy names the commands in the record of the calls a recovery
// denies because no one decided in time (artifact.Decision.By): lode
// recover, lode worker and lode serve's recoverer alike.
const recoverBy = "lode recover"

// recoverNotes is the part of lode recover's and lode worker's help that
// says what they do.
const recoverNotes = `A run whose process died (kill -9, a crash, a redeploy) leaves its thread's
lease unreleased. Once the lease has expired (lease: in lode.yaml, 30s by
default) lode recover takes it over and finishes the run: a tool call that had
started and has no result gets an "interrupted" error result (a tool marked
idempotent runs again), a model answer that never landed is asked for again,
and calls that wait for approval keep waiting, unless --approval-expiry (or
approval_expiry: in lode.yaml) has passed: then they are denied, and the model
reads why. A run that stopped on an error before the model answered (its server
was unreachable or failed; lode marks the thread lode.run.stopped) is continued
too: the model is asked again. Two recoverers never continue one thread. Each
thread goes on with the model it remembers (lode.model.* in its metadata), and
as it was, with its own user, tenant and roles; flags (--provider, --base-url,
--model) come first, then the thread's memory, then the environment and
lode.yaml. lode worker does the same every --every until Ctrl-C or SIGTERM,
which stop it after the run in hand.

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

// prepare checks the flags and the ledger, and readies the recoverer
// that continues the runs; it builds each agent, through openDoor as every
// other door, when a thread needs it.
func (o *recoverOptions) prepare(ctx context.Context, e env, cmd string, rest []string) (*recoverer, error) {
	if len(rest) > 0 {
		return nil, usageError{fmt.Sprintf("%s takes no arguments, got %q", cmd, rest)}
	}
	if o.approvalExpiry < 0 {
		return nil, usageError{fmt.Sprintf("--approval-expiry %s: must not be negative (0 means approval_expiry in lode.yaml, or wait for ever)", o.approvalExpiry)}
	}
	if o.every < 0 {
		return nil, usageError{fmt.Sprintf("--every %s: must not be negative (0 means %s)", o.every, DefaultWorkerEvery)}
	}
	cfg, err := o.load(e)
	if err != nil {
		return nil, err
	}
	dir := o.store
	if dir == "" {
		dir = cfg.Store
	}
	if dir == "" {
		return nil, usageError{cmd + " needs the ledger the runs used: --store DIR, or store: in lode.yaml"}
	}
	if err := checkStore(o.store, cfg); err != nil {
		return nil, err
	}
	s, err := openStore(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &recoverer{e: e, o: &o.options, store: s, dir: dir, expiry: time.Duration(cfg.ApprovalExpiry), agents: map[modelMemory]*agent{}}, nil
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
	r, err := o.prepare(ctx, e, "lode recover", rest)
	if err != nil {
		return err
	}
	defer r.close()
	ctx, stop := interruptible(ctx, e)
	defer stop()
	return r.pass(ctx)
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
	r, err := o.prepare(ctx, e, "lode worker", rest)
	if err != nil {
		return err
	}
	defer r.close()
	every := o.every
	if every == 0 {
		every = DefaultWorkerEvery
	}
	// Ctrl-C and SIGTERM both stop the worker cleanly: the run in hand is
	// cancelled, its lease released, and the next worker finishes it.
	ctx, stop := interruptible(ctx, e)
	defer stop()
	fmt.Fprintf(e.stderr, "lode worker: recovering stopped runs in %s every %s\n", storeName(r.dir), every)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := r.pass(ctx); err != nil && ctx.Err() == nil {
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
