package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
)

// cmdResume records decisions on a paused thread and continues its run.
func cmdResume(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode resume", flag.ContinueOnError)
	var o options
	o.register(fs)
	describe(fs, "lode resume [flags] THREAD [approve:ID | deny:ID=REASON | edit:ID=JSON ...]",
		"Without decisions it lists the calls that wait. Calls left undecided stay pending.\n\n"+exitCodes)
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
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	dir := storeDir(&o, cfg)
	if dir == "" {
		return usageError{"lode resume needs the ledger the run used: --store DIR, or store: in lode.yaml"}
	}
	a, err := newAgent(ctx, e, &o)
	if err != nil {
		return err
	}
	defer a.close()
	s, err := file.Open(dir)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Load(ctx, rest[0])
	if err != nil {
		return err
	}
	ctx, stop := interruptible(ctx, e)
	defer stop()
	_, err = a.step.Resume(ctx, st, a.prov, ds)
	_ = a.step.Flush(context.WithoutCancel(ctx))
	a.printer.endLine()
	var pe *loop.PendingError
	if errors.As(err, &pe) {
		return pausedError(e.stderr, pe, dir)
	}
	if err != nil {
		return fmt.Errorf("%w", explain(err, a.cfg, a.baseURL))
	}
	return nil
}
