package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"unicode/utf8"

	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

func cmdRun(ctx context.Context, e env, args []string) (err error) {
	fs := flag.NewFlagSet("lode run", flag.ContinueOnError)
	var o options
	o.register(fs)
	o.registerTenant(fs)
	var cas cassetteFlags
	cas.register(fs)
	var threadID string
	registerThread(fs, &threadID)
	var tf temporalFlags
	tf.register(fs)
	describe(fs, `lode run [flags] "prompt"   (or lode run [flags] - to read the prompt from standard input)`, `A call that needs approval stops the run with exit code 3; with --store (or
store: in lode.yaml) the lode resume commands that decide it are printed, one
per choice, ready to paste. With a store, the run's thread is kept and its ID
printed; --thread ID adds the prompt to that thread and goes on with it, and
--thread ID without a prompt goes on with a run that stopped before the model
answered (its server failed, Ctrl-C).

`+identityNotes+"\n"+rememberNotes+"\n"+temporalNotes+exitCodes)
	words, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	prompt := strings.TrimSpace(strings.Join(words, " "))
	if len(words) == 1 && words[0] == "-" {
		if prompt, err = readPrompt(e.stdin); err != nil {
			return err
		}
	}
	if prompt == "" && threadID == "" {
		return usageError{`lode run needs a prompt: lode run "what is 2^64?" (or lode run - to read it from standard input)`}
	}
	if onTemporal, err := tf.check(e); err != nil || onTemporal {
		if err != nil {
			return err
		}
		if prompt == "" {
			return usageError{"lode run --temporal needs a prompt"}
		}
		if cas.record != "" || cas.replay != "" {
			return usageError{"--record and --replay run the model in this process; with --temporal it runs on the workers"}
		}
		return runOnTemporal(ctx, e, &o, &tf, threadID, prompt)
	}
	if e.cassette, err = cas.start(); err != nil {
		return err
	}
	if e.cassette != nil {
		defer func() { err = stopCassette(e.cassette, e, err) }()
	}
	var stored ledger.State
	if threadID != "" {
		var closeStored func()
		if stored, closeStored, err = openStored(ctx, e, &o, threadID); err != nil {
			return err
		}
		defer closeStored()
	}
	a, err := newAgent(ctx, e, &o)
	if err != nil {
		return err
	}
	defer a.close()
	ctx, stop := interruptible(ctx, e)
	defer stop()
	thread, closeStore, err := a.startThread(ctx, &o, stored)
	if err != nil {
		return err
	}
	defer closeStore()
	if waiting := loop.Pending(thread); len(waiting) > 0 {
		// A message between a call and its result is a turn order
		// servers reject: the calls are decided first.
		listPending(e.stderr, thread.ID(), waiting, o.resumeCmd(a.store))
		return pausedErr{fmt.Sprintf("thread %s waits for the decisions above before it takes another message", thread.ID())}
	}
	if prompt == "" {
		// Without a prompt, --thread goes on with a run that stopped
		// before the model answered (its server failed, Ctrl-C).
		if !answerDue(thread) {
			return usageError{fmt.Sprintf("thread %s ends with the model's answer, so there is nothing to go on with: give lode run a prompt", thread.ID())}
		}
		err = a.goOn(ctx, thread)
	} else {
		err = a.ask(ctx, thread, prompt)
	}
	var pe *loop.PendingError
	if errors.As(err, &pe) {
		return pausedError(e.stderr, pe, o.resumeCmd(a.store))
	}
	// A run that stopped before the model answered keeps its thread,
	// marked for lode recover (noteStop): say where, so that the person
	// goes on with it rather than finding it later in lode threads.
	if err == nil || answerDue(thread) || errors.Is(err, loop.ErrTripped) {
		threadNote(e.stderr, thread, a.store)
	}
	return err
}

// maxPrompt bounds a prompt read from standard input.
const maxPrompt = 1 << 20

// readPrompt reads the whole of standard input as the prompt.
func readPrompt(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPrompt+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("reading the prompt from standard input: %w", err)
	case len(b) > maxPrompt:
		return "", fmt.Errorf("the prompt on standard input is longer than %d bytes", maxPrompt)
	case !utf8.Valid(b):
		return "", errors.New("the prompt on standard input is not UTF-8 text")
	}
	p := strings.TrimSpace(string(b))
	if p == "" {
		return "", usageError{"lode run -: standard input held no prompt"}
	}
	return p, nil
}

// interruptible cancels ctx on Ctrl-C.
func interruptible(ctx context.Context, e env) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch, release := interrupts(e)
	go func() {
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { release(); cancel() }
}

func interrupts(e env) (<-chan os.Signal, func()) {
	if e.interrupts != nil {
		return e.interrupts, func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	return ch, func() { signal.Stop(ch) }
}
