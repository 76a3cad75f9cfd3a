package cli

import (
	"bytes"
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
lode chat --thread ID go on with a thread.

A fork (lode fork, an edit in lode web) comes right after the thread it was
made from, with FROM PARENT@N: it kept PARENT's first N turns. The FROM column
is there when the store holds forks. With THREAD, only that thread and the
forks made from it (and from them) are listed.`

// a2aTaskKey is the metadata key of the thread x/a2a keeps for each A2A
// task (x/a2a's TaskKey): bookkeeping with no turns, not a conversation.
const a2aTaskKey = "a2a.task"

// threadRow is one line of lode threads.
type threadRow struct {
	id, title, updated, state string
	turns                     int
	// parent and at are where the thread was forked from; "" for one
	// that is not a fork.
	parent, at string
}

// cmdThreads lists the threads of the store, each fork after the thread
// it was made from.
func cmdThreads(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lode threads", flag.ContinueOnError)
	var o options
	o.registerTools(fs)
	o.registerStore(fs)
	describe(fs, "lode threads [flags] [THREAD]", threadsNotes)
	rest, err := parseFlags(fs, e, args)
	if err != nil {
		return err
	}
	only := ""
	switch {
	case len(rest) == 1:
		only = rest[0]
		if err := ledger.CheckID(only); err != nil {
			return usageError{fmt.Sprintf("%q is not a thread ID: %v", only, err)}
		}
	case len(rest) > 1:
		return usageError{fmt.Sprintf("lode threads takes at most one thread ID; got %q too", rest[1])}
	}
	cfg, err := o.load(e)
	if err != nil {
		return err
	}
	spec, err := o.storeSpec(cfg, "lode threads needs the store: --store DIR, or store: in lode.yaml")
	if err != nil {
		return err
	}
	name := storeName(spec)
	// Listing creates nothing: a folder or file that is not there holds
	// no threads.
	if what, absent, err := storeAbsent(spec); err != nil {
		return err
	} else if absent {
		if only != "" {
			return fmt.Errorf("thread %s is not in %s: %s does not exist (check --store, or store: in lode.yaml)", only, name, what)
		}
		fmt.Fprintf(e.stderr, "no threads in %s (%s does not exist)\n", name, what)
		return nil
	}
	s, err := openStore(ctx, spec)
	if err != nil {
		return err
	}
	defer s.Close()
	var rows []threadRow
	for info, err := range s.List(ctx) {
		if err != nil {
			if info.ID == "" {
				return err
			}
			fmt.Fprintf(e.stderr, "lode: thread %s: %s\n", info.ID, oneLine(err.Error()))
			continue
		}
		if _, task := info.Metadata[a2aTaskKey]; task && info.Turns == 0 {
			continue // an A2A task's record; its conversation is an a2a-ctx-* thread
		}
		st, err := s.Load(ctx, info.ID)
		if err != nil {
			fmt.Fprintf(e.stderr, "lode: thread %s: %s\n", info.ID, oneLine(err.Error()))
			continue
		}
		r := threadRow{id: info.ID, title: threadTitle(st), turns: info.Turns, updated: info.Updated.UTC().Format(time.DateTime)}
		if len(loop.Pending(st)) > 0 {
			r.state = "paused"
		}
		r.parent = info.Metadata[ledger.ForkedFromKey]
		r.at = info.Metadata[ledger.ForkedAtKey]
		st.Close()
		rows = append(rows, r)
	}
	rows = branchOrder(rows, only)
	if len(rows) == 0 {
		if only != "" {
			return fmt.Errorf("thread %s is not in %s: lode threads --store %s lists the stored threads", only, name, shellQuote(name))
		}
		fmt.Fprintf(e.stderr, "no threads in %s\n", name)
		return nil
	}
	forks := false
	for _, r := range rows {
		forks = forks || r.parent != ""
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	head := "ID\tTITLE\tTURNS\tUPDATED\tSTATE"
	if forks {
		head += "\tFROM"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s", r.id, r.title, r.turns, r.updated, r.state)
		if forks {
			from := ""
			if r.parent != "" {
				from = r.parent + "@" + r.at
			}
			fmt.Fprintf(tw, "\t%s", from)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// A line without a FROM ends where its last word does.
	for line := range strings.Lines(b.String()) {
		fmt.Fprintln(e.stdout, strings.TrimRight(line, " \n"))
	}
	return nil
}

// branchOrder puts each fork right after the thread it was made from (and
// that thread's earlier forks), keeping the store's order otherwise. A
// fork whose parent is not listed stands where the store put it. With
// only, it keeps that thread and the forks made from it, at any depth.
func branchOrder(rows []threadRow, only string) []threadRow {
	listed := map[string]bool{}
	for _, r := range rows {
		listed[r.id] = true
	}
	children := map[string][]threadRow{}
	var roots []threadRow
	for _, r := range rows {
		switch {
		case only != "" && r.id == only:
			roots = append(roots, r)
		case r.parent != "" && listed[r.parent]:
			children[r.parent] = append(children[r.parent], r)
		case only == "":
			roots = append(roots, r)
		}
	}
	out := make([]threadRow, 0, len(rows))
	seen := map[string]bool{}
	var walk func(r threadRow)
	walk = func(r threadRow) {
		if seen[r.id] {
			return
		}
		seen[r.id] = true
		out = append(out, r)
		for _, c := range children[r.id] {
			walk(c)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	if only == "" {
		// Threads that name each other as parents (metadata written by
		// hand) are reached from no root; they are listed all the same.
		for _, r := range rows {
			walk(r)
		}
	}
	return out
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

// storeSpec is the store a command over stored threads names: --store,
// else store: in lode.yaml, checked; missing is the usage error without one.
func (o *options) storeSpec(cfg *Config, missing string) (string, error) {
	if err := checkStore(o.store, cfg); err != nil {
		return "", err
	}
	spec := o.store
	if spec == "" {
		spec = cfg.Store
	}
	if spec == "" {
		return "", usageError{missing}
	}
	return spec, nil
}
