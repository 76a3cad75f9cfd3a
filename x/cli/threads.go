package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// titleKey is the thread metadata key lode threads reads a title from; a
// thread without one is titled by its first user message.
const titleKey = "title"

// registerThread adds --thread, which continues a stored thread.
func registerThread(fs *flag.FlagSet, id *string) {
	fs.StringVar(id, "thread", "", "continue the stored thread with this ID (lode threads lists them); needs --store or store: in lode.yaml")
}

// openThread is the thread a run or chat talks on: the stored thread id
// when one is given, else a new thread in the store spec names, else (no
// store) a thread in memory; a new thread is created with meta.
func openThread(ctx context.Context, spec, id string, meta map[string]string) (ledger.State, func(), error) {
	if id == "" {
		return newThread(ctx, spec, meta)
	}
	if spec == "" {
		return nil, nil, usageError{"--thread needs the store that keeps the thread: --store DIR, or store: in lode.yaml"}
	}
	if err := ledger.CheckID(id); err != nil {
		return nil, nil, usageError{fmt.Sprintf("--thread %q is not a thread ID: %v", id, err)}
	}
	what, absent, err := storeAbsent(spec)
	if err != nil {
		return nil, nil, err
	}
	name := storeName(spec)
	if absent {
		return nil, nil, fmt.Errorf("thread %s is not in %s: %s does not exist (check --store, or store: in lode.yaml)", id, name, what)
	}
	s, err := openStore(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	st, err := s.Load(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		s.Close()
		return nil, nil, fmt.Errorf("thread %s is not in %s: lode threads --store %s lists the stored threads", id, name, shellQuote(name))
	}
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return st, func() { s.Close() }, nil
}

// threadNote says how to go on with a stored thread.
func threadNote(w io.Writer, thread ledger.State, spec string) {
	if spec == "" {
		return
	}
	fmt.Fprintf(w, "(thread %s in %s: --thread %s goes on with it)\n", thread.ID(), storeName(spec), thread.ID())
}

const threadsNotes = `Each line: the thread's ID, its title (its title metadata, else its first
user message), its turns, when it last changed (UTC) and "paused" when tool
calls wait for approval (lode resume decides them). lode run --thread ID and
lode chat --thread ID go on with a thread.`

// cmdThreads lists the threads of the store.
func cmdThreads(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode threads", flag.ContinueOnError)
	var o options
	o.registerTools(fs)
	o.registerStore(fs)
	describe(fs, "lode threads [flags]", threadsNotes)
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	if err := noArgs("lode threads", rest); err != nil {
		return err
	}
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	if err := checkStore(o.store, cfg); err != nil {
		return err
	}
	spec := o.store
	if spec == "" {
		spec = cfg.Store
	}
	if spec == "" {
		return usageError{"lode threads needs the store: --store DIR, or store: in lode.yaml"}
	}
	name := storeName(spec)
	// Listing creates nothing: a folder or file that is not there holds
	// no threads.
	if what, absent, err := storeAbsent(spec); err != nil {
		return err
	} else if absent {
		fmt.Fprintf(e.stderr, "no threads in %s (%s does not exist)\n", name, what)
		return nil
	}
	s, err := openStore(ctx, spec)
	if err != nil {
		return err
	}
	defer s.Close()
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	n := 0
	for info, err := range s.List(ctx) {
		if err != nil {
			if info.ID == "" {
				return err
			}
			fmt.Fprintf(e.stderr, "lode: thread %s: %s\n", info.ID, oneLine(err.Error()))
			continue
		}
		st, err := s.Load(ctx, info.ID)
		if err != nil {
			fmt.Fprintf(e.stderr, "lode: thread %s: %s\n", info.ID, oneLine(err.Error()))
			continue
		}
		if n == 0 {
			fmt.Fprintln(tw, "ID\tTITLE\tTURNS\tUPDATED\tSTATE")
		}
		n++
		state := ""
		if len(loop.Pending(st)) > 0 {
			state = "paused"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", info.ID, threadTitle(st), info.Turns, info.Updated.UTC().Format(time.DateTime), state)
	}
	if n == 0 {
		fmt.Fprintf(e.stderr, "no threads in %s\n", name)
		return nil
	}
	return tw.Flush()
}

// threadTitle is a thread's title metadata, else its first user message,
// on one line and short.
func threadTitle(st ledger.State) string {
	if t, ok := st.Metadata(titleKey); ok && strings.TrimSpace(t) != "" {
		return clipTitle(t)
	}
	for _, turn := range st.Turns() {
		if turn.Role != ledger.RoleUser {
			continue
		}
		for _, a := range turn.Artifacts {
			if t, ok := a.(artifact.Text); ok && strings.TrimSpace(t.Content) != "" {
				return clipTitle(t.Content)
			}
		}
	}
	return "(untitled)"
}

// clipTitle keeps a title to one line of at most 50 characters.
func clipTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 50 {
		return string(r[:49]) + "…"
	}
	return s
}
