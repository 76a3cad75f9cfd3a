package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/lodeworks/lode/ledger"
)

const forkNotes = `Makes a new thread of the first N turns of THREAD (ledger.Fork) and prints its
ID on stdout; stderr says what it keeps and the command that goes on with it.
THREAD is not changed. Turns count as lode threads counts them (TURNS): every
message of the thread, the model's answers, tool results and the person's
messages alike, from 0; --at N keeps turns 0 to N-1, so the fork's next turn is
THREAD's turn N. --at 0 keeps none, --at with THREAD's TURNS keeps all. A cut
between a tool call and its result is refused, naming the turn to cut at.

The fork keeps THREAD's metadata: its model (lode run|chat --thread ID asks the
same model), tenant and roles, and links back to it (lode threads lists it
right after THREAD, FROM THREAD@N). What belongs to THREAD's later turns is left
behind: calls waiting for approval, tool-search activations, the lease, and
the mark lode recover finds a stopped run by (the fork runs when you say).
A stored thread keeps its tenant: --tenant with another tenant than THREAD's is
refused, as lode run --thread refuses it.`

// cmdFork forks a stored thread at a turn into a new thread.
func cmdFork(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode fork", flag.ContinueOnError)
	var o options
	o.registerTools(fs)
	o.registerStore(fs)
	fs.StringVar(&o.tenant, "tenant", "", "the tenant the caller acts for: a thread of another tenant is refused (the fork keeps THREAD's tenant)")
	at := fs.Int("at", 0, "how many of THREAD's turns the fork keeps (0 to its TURNS); the fork goes on from THREAD's turn N")
	var newID string
	fs.StringVar(&newID, "id", "", "the fork's ID (default: a new random one); an ID already taken is refused")
	describe(fs, "lode fork [flags] THREAD --at N", forkNotes)
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	switch {
	case len(rest) == 0:
		return usageError{"lode fork needs a thread ID: lode fork --store DIR THREAD --at N"}
	case len(rest) > 1:
		return usageError{fmt.Sprintf("lode fork takes one thread ID; got %q too", rest[1])}
	}
	id := rest[0]
	atSet := false
	fs.Visit(func(f *flag.Flag) { atSet = atSet || f.Name == "at" })
	if !atSet {
		return usageError{"lode fork needs --at N, the number of turns the fork keeps: lode fork --store DIR " + shellQuote(id) + " --at N"}
	}
	if *at < 0 {
		return usageError{fmt.Sprintf("--at %d: must not be negative (--at 0 keeps none of the thread's turns)", *at)}
	}
	if err := ledger.CheckID(id); err != nil {
		return usageError{fmt.Sprintf("%q is not a thread ID: %v", id, err)}
	}
	if newID != "" {
		if err := ledger.CheckID(newID); err != nil {
			return usageError{fmt.Sprintf("--id %q is not a thread ID: %v", newID, err)}
		}
	}
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	spec, err := o.storeSpec(cfg, "lode fork needs the store that keeps the thread: --store DIR, or store: in lode.yaml")
	if err != nil {
		return err
	}
	name := storeName(spec)
	// A store that is not there holds no thread to fork, and is not
	// created.
	if what, absent, err := storeAbsent(spec); err != nil {
		return err
	} else if absent {
		return fmt.Errorf("thread %s is not in %s: %s does not exist (check --store, or store: in lode.yaml)", id, name, what)
	}
	s, err := openStore(ctx, spec)
	if err != nil {
		return err
	}
	defer s.Close()
	notFound := fmt.Errorf("thread %s is not in %s: lode threads --store %s lists the stored threads", id, name, shellQuote(name))
	parent, err := s.Load(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	n := parent.Len()
	err = checkTenant(parent, o.tenant)
	parent.Close()
	if err != nil {
		return err
	}
	if *at > n {
		return fmt.Errorf("cannot fork thread %s at %d: it has %s, so --at takes 0 (keep none) to %d (keep all)", id, *at, plural(n, "turn"), n)
	}
	var fopts []ledger.ForkOption
	if newID != "" {
		fopts = append(fopts, ledger.WithForkID(newID))
	}
	f, err := ledger.Fork(ctx, s, id, *at, fopts...)
	switch {
	case errors.Is(err, ledger.ErrForkPoint):
		// The ledger's reason names the call and the turn to cut at.
		_, reason, ok := strings.Cut(err.Error(), strings.TrimPrefix(ledger.ErrForkPoint.Error(), "ledger: ")+": ")
		if !ok {
			reason = err.Error()
		}
		return fmt.Errorf("cannot fork thread %s at %d: %s", id, *at, reason)
	case errors.Is(err, ledger.ErrNotFound):
		// Deleted between the check and the fork.
		return notFound
	case errors.Is(err, ledger.ErrConflict) && newID != "":
		return fmt.Errorf("--id %s: a thread %s is already in %s: give another --id, or leave it out for a new ID", newID, newID, name)
	case err != nil:
		return err
	}
	defer f.Close()
	// A run of the parent that stopped before the model answered is the
	// parent's to recover: the fork goes on only when asked to.
	if v, _ := f.Metadata(stoppedKey); v != "" {
		if err := f.SetMetadata(stoppedKey, ""); err != nil {
			return fmt.Errorf("thread %s, forked from %s: %w", f.ID(), id, err)
		}
	}
	fmt.Fprintln(e.stdout, f.ID())
	kept := fmt.Sprintf("the first %d of", *at)
	if *at == 0 {
		kept = "none of"
	}
	cmd := goOnCmd(&o, name, f.ID())
	if answerDue(f) {
		fmt.Fprintf(e.stderr, "thread %s in %s keeps %s thread %s's %s, which end waiting for the model's answer; %s goes on with it\n", f.ID(), name, kept, id, plural(n, "turn"), cmd)
		return nil
	}
	fmt.Fprintf(e.stderr, "thread %s in %s keeps %s thread %s's %s; %s PROMPT goes on with it\n", f.ID(), name, kept, id, plural(n, "turn"), cmd)
	return nil
}
