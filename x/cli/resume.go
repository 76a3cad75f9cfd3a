package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/lodeworks/lode/loop"
)

// resumeNotes is the part of lode resume's help that says what it does.
const resumeNotes = `Each decision names a call: approve:ID runs it once, deny:ID=REASON refuses it
(the model reads the reason), edit:ID=JSON runs it with other arguments. Calls
left undecided keep waiting. Without decisions it lists the calls that wait,
with the command that decides each, and changes nothing; a thread with nothing
waiting is said so, and no model is asked; one whose run stopped before the
model answered (its server failed) is said so too, with the lode run --thread
command that goes on with it.

`

// cmdResume records decisions on a paused thread and continues its run.
func cmdResume(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode resume", flag.ContinueOnError)
	var o options
	o.register(fs)
	o.registerTenant(fs)
	var tf temporalFlags
	tf.register(fs)
	describe(fs, "lode resume [flags] THREAD [approve:ID | deny:ID=REASON | edit:ID=JSON ...]", resumeNotes+identityNotes+"\n"+rememberNotes+"\n"+temporalNotes+exitCodes)
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return usageError{"lode resume needs a thread ID: lode resume --store DIR THREAD approve:ID"}
	}
	ds, err := parseDecisions(rest[1:])
	if err != nil {
		return err
	}
	onTemporal, err := tf.check(e)
	if err != nil {
		return err
	}
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	if err := checkStore(o.store, cfg); err != nil {
		return err
	}
	dir := o.store
	if dir == "" {
		dir = cfg.Store
	}
	if dir == "" {
		return usageError{"lode resume needs the ledger the run used: --store DIR, or store: in lode.yaml"}
	}
	s, err := openStore(ctx, dir)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Load(ctx, rest[0])
	if err != nil {
		return err
	}
	if err := checkTenant(st, o.tenant); err != nil {
		return err
	}
	// Listing reads the thread only: no tools are mounted, no model asked.
	if len(ds) == 0 {
		calls := loop.Pending(st)
		if len(calls) == 0 {
			if answerDue(st) {
				fmt.Fprintf(e.stderr, "thread %s has no tool calls waiting for approval, and its run stopped before the model answered: %s goes on with it\n", st.ID(), goOnCmd(&o, dir, st.ID()))
				return nil
			}
			fmt.Fprintf(e.stderr, "thread %s has no tool calls waiting for approval; nothing to do\n", st.ID())
			return nil
		}
		rc := o.resumeCmd(dir)
		rc.extra = tf.words()
		listPending(e.stderr, st.ID(), calls, rc)
		return pausedErr{fmt.Sprintf("thread %s waits for the decisions above", st.ID())}
	}
	if onTemporal {
		return resumeOnTemporal(ctx, e, &o, &tf, cfg, dir, st, ds)
	}
	o.thread = rememberedModel(st)
	a, err := newAgent(ctx, e, &o)
	if err != nil {
		return err
	}
	defer a.close()
	if err := a.rememberModel(st); err != nil {
		return err
	}
	ctx, stop := interruptible(ctx, e)
	defer stop()
	_, err = a.step.Resume(ctx, st, a.prov, ds)
	_ = a.step.Flush(context.WithoutCancel(ctx))
	a.printer.endLine()
	noteStop(st, err)
	var pe *loop.PendingError
	if errors.As(err, &pe) {
		return pausedError(e.stderr, pe, o.resumeCmd(dir))
	}
	if err != nil {
		return fmt.Errorf("%w", explain(err, a.cfg, a.baseURL))
	}
	return nil
}
