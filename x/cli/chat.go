package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

func cmdChat(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode chat", flag.ContinueOnError)
	var o options
	o.register(fs)
	o.registerTenant(fs)
	var threadID string
	registerThread(fs, &threadID)
	describe(fs, "lode chat [flags]", "Ctrl-C stops a turn; at the prompt it only says how to quit. Ctrl-D quits.\n--timeout and --idle-timeout bound each answer; one that runs out is reported and the chat goes on.\nA call that needs approval is asked about here (y, n, e to edit); an edit the\ntool's schema refuses is asked about again, and calls that wait are decided\nbefore the next message.\nWith a store (--store, store: in lode.yaml) the chat's thread is kept there and\nits ID printed; --thread ID goes on with a stored thread.\n\n"+identityNotes+"\n"+rememberNotes+"\n"+exitCodes)
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	if err := noArgs("lode chat", rest); err != nil {
		return err
	}
	// Lines are read apart from the loop so that a signal or the end of
	// ctx is seen while the prompt waits; an MCP server's elicitation
	// reads them too, while a turn runs.
	var stored ledger.State
	if threadID != "" {
		var closeStored func()
		if stored, closeStored, err = openStored(ctx, e, &o, threadID); err != nil {
			return err
		}
		defer closeStored()
	}
	lines := make(chan string)
	e.elicit = terminalElicitor(e.stderr, lines)
	a, err := newAgent(ctx, e, &o)
	if err != nil {
		return err
	}
	defer a.close()

	// Ctrl-C is ours while the chat runs: it stops a turn, and at the
	// prompt it only says how to quit.
	sigs, release := interrupts(e)
	defer release()
	readErr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		in := bufio.NewScanner(e.stdin)
		in.Buffer(make([]byte, 64<<10), 1<<20)
		for in.Scan() {
			select {
			case lines <- in.Text():
			case <-done:
				return
			}
		}
		readErr <- in.Err()
		close(lines)
	}()

	thread, closeStore, err := a.startThread(ctx, &o, stored)
	if err != nil {
		return err
	}
	defer closeStore()
	fmt.Fprintf(e.stderr, "lode chat with %s — Ctrl-C stops a turn, Ctrl-D quits\n", a.cfg.Model.Name)
	threadNote(e.stderr, thread, a.store)
	for {
		// Calls still waiting (a decision round was stopped) are decided
		// before another user message is taken: a message between a call
		// and its result is a turn order servers reject.
		waiting := loop.Pending(thread)
		var line string
		if len(waiting) == 0 {
			a.printer.prompting("you> ")
		prompt:
			for {
				select {
				case <-ctx.Done():
					a.printer.prompting("")
					fmt.Fprintln(e.stderr)
					return ctx.Err()
				case <-sigs:
					a.printer.prompting("")
					fmt.Fprint(e.stderr, "\n(Ctrl-D quits)\n")
					a.printer.prompting("you> ")
				case l, ok := <-lines:
					a.printer.prompting("")
					if !ok {
						fmt.Fprintln(e.stderr)
						return <-readErr
					}
					line = strings.TrimSpace(l)
					break prompt
				}
			}
			if line == "" {
				continue
			}
		} else {
			fmt.Fprintf(e.stderr, "(%s still %s for approval)\n", plural(len(waiting), "tool call"), agree(len(waiting), "waits", "wait"))
		}
		turnCtx, cancel := context.WithCancel(ctx)
		answered := make(chan error, 1)
		if waiting != nil {
			answered <- &loop.PendingError{Thread: thread.ID(), Calls: waiting}
		} else {
			go func() { answered <- a.ask(turnCtx, thread, line) }()
		}
		var decided []artifact.Decision
	turn:
		for {
			select {
			case err = <-answered:
				var pe *loop.PendingError
				var de *loop.DecisionError
				var ask []artifact.Pending
				switch {
				case errors.As(err, &pe):
					ask, decided = pe.Calls, nil
				case errors.As(err, &de) && decided != nil:
					// Nothing was recorded: keep the other decisions and
					// ask again about the one refused.
					ask = refusedCall(thread, de.ToolCallID)
					if ask == nil {
						break turn
					}
					fmt.Fprintf(e.stderr, "lode: %s; decide again\n", oneLine(de.Error()))
					decided = slices.DeleteFunc(decided, func(d artifact.Decision) bool { return d.ToolCallID == de.ToolCallID })
				default:
					break turn
				}
				// Ask here, then go on as Resume would anywhere.
				ds, aerr := askInTerminal(turnCtx, e.stderr, lines, ask)
				if errors.Is(aerr, io.EOF) {
					cancel()
					fmt.Fprintln(e.stderr)
					return <-readErr
				}
				if aerr != nil {
					err = aerr
					break turn
				}
				decided = append(decided, ds...)
				all := slices.Clone(decided)
				go func() { answered <- a.resume(turnCtx, thread, all) }()
			case <-sigs:
				cancel()
			}
		}
		cancel()
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.Canceled):
			// The thread keeps what was shown, as the page does, so
			// that the next message follows an answer.
			if kerr := loop.KeepStopped(thread, a.printer.partial()); kerr != nil {
				fmt.Fprintln(e.stderr, "lode: keeping the stopped answer: "+oneLine(kerr.Error()))
			}
			fmt.Fprintln(e.stderr, "(turn stopped)")
		case errors.Is(err, loop.ErrTripped):
			te, _ := errors.AsType[*loop.TripError](err)
			fmt.Fprintln(e.stderr, "lode: "+oneLine(tripMessage(te)))
		default:
			fmt.Fprintln(e.stderr, "lode: "+oneLine(err.Error()))
		}
	}
}

// refusedCall is the pending call of thread with id, alone; nil when it
// does not wait.
func refusedCall(thread ledger.State, id string) []artifact.Pending {
	for _, c := range loop.Pending(thread) {
		if c.ToolCallID == id {
			return []artifact.Pending{c}
		}
	}
	return nil
}
