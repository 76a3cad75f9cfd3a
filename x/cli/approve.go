package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
)

// registerStore adds --store, the ledger that lets a paused run resume.
func (o *options) registerStore(fs *flag.FlagSet) {
	fs.StringVar(&o.store, "store", "", "where threads are kept, so that a run paused for approval can be resumed: "+storeForms+" (default: store in lode.yaml; none keeps the thread in memory)")
}

// newThread is a thread of the store spec names, or an in-memory one,
// created with meta.
func newThread(ctx context.Context, spec string, meta map[string]string) (ledger.State, func(), error) {
	if spec == "" {
		return ledger.NewThread(ledger.WithMetadata(meta)), func() {}, nil
	}
	s, err := openStore(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	st, err := s.Create(ctx, ledger.WithMetadata(meta))
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return st, func() { s.Close() }, nil
}

// pausedErr is a run that stopped because calls wait for approval: exit
// code exitPaused.
type pausedErr struct{ msg string }

func (p pausedErr) Error() string { return p.msg }

// resumeCmd is the start of the lode resume command that decides on a
// paused thread, with the flags that find its configuration and ledger.
type resumeCmd struct {
	config, store, role string
	// extra are more flags the command needs (--temporal ADDR ...).
	extra []string
}

func (o *options) resumeCmd(store string) resumeCmd {
	return resumeCmd{config: o.config, store: store, role: o.role}
}

// line is the command deciding one call: words quoted for a POSIX shell.
func (r resumeCmd) line(thread, decision string) string {
	words := []string{"lode", "resume"}
	if r.config != "" {
		words = append(words, "--config", r.config)
	}
	words = append(words, "--store", storeName(r.store))
	if r.role != "" {
		words = append(words, "--role", r.role)
	}
	words = append(words, r.extra...)
	words = append(words, thread, decision)
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	return strings.Join(words, " ")
}

// shellQuote leaves a word a shell reads as itself alone, and puts any
// other in single quotes; a quote inside closes them, comes escaped, and
// opens them again.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// listPending writes the calls that wait and, with a store, the commands
// that decide on each: one line per choice, each ready to paste.
func listPending(w io.Writer, thread string, calls []artifact.Pending, rc resumeCmd) {
	fmt.Fprintf(w, "%s %s for approval:\n", plural(len(calls), "tool call"), agree(len(calls), "waits", "wait"))
	for _, c := range calls {
		fmt.Fprintf(w, "  %s  %s %s  (%s)\n", c.ToolCallID, c.Name, c.Arguments, c.Reason)
	}
	if rc.store == "" {
		return
	}
	fmt.Fprintln(w, "decide on each call with one of these commands (calls left undecided keep waiting):")
	for _, c := range calls {
		fmt.Fprintln(w, "  "+rc.line(thread, "approve:"+c.ToolCallID))
		fmt.Fprintln(w, "  "+rc.line(thread, "deny:"+c.ToolCallID+"=REASON"))
		fmt.Fprintln(w, "  "+rc.line(thread, "edit:"+c.ToolCallID+"="+c.Arguments))
	}
}

// pausedError lists on w the calls that wait for approval and returns
// the error that ends the command with exitPaused.
func pausedError(w io.Writer, pe *loop.PendingError, rc resumeCmd) error {
	listPending(w, pe.Thread, pe.Calls, rc)
	if rc.store == "" {
		return pausedErr{"the run paused for approval, and its thread was kept in memory; run again with --store DIR (or store: in lode.yaml) to resume it later"}
	}
	return pausedErr{fmt.Sprintf("the run paused for approval: thread %s waits for the decisions above", pe.Thread)}
}

// parseDecisions reads approve:ID, deny:ID[=REASON] and edit:ID=JSON.
func parseDecisions(args []string) ([]artifact.Decision, error) {
	var ds []artifact.Decision
	for _, a := range args {
		verb, rest, _ := strings.Cut(a, ":")
		id, val, hasVal := strings.Cut(rest, "=")
		if id == "" {
			return nil, usageError{fmt.Sprintf("decision %q names no call: want approve:ID, deny:ID=REASON or edit:ID=JSON", a)}
		}
		var d artifact.Decision
		switch {
		case verb == "approve" && !hasVal:
			d = loop.Approve(id)
		case verb == "deny":
			d = loop.Deny(id, val)
		case verb == "edit" && hasVal:
			if !json.Valid([]byte(val)) {
				return nil, usageError{fmt.Sprintf("edit:%s: %q is not JSON", id, val)}
			}
			d = loop.ApproveWith(id, val)
		default:
			return nil, usageError{fmt.Sprintf("unknown decision %q: want approve:ID, deny:ID=REASON or edit:ID=JSON", a)}
		}
		d.By = "lode command line"
		ds = append(ds, d)
	}
	return ds, nil
}

// askInTerminal asks about each pending call on the terminal — y runs it,
// n refuses it, e takes new arguments — reading answers from lines.
func askInTerminal(ctx context.Context, w io.Writer, lines <-chan string, calls []artifact.Pending) ([]artifact.Decision, error) {
	var ds []artifact.Decision
	for _, c := range calls {
		fmt.Fprintf(w, "approve %s %s? (%s) [y/n/e] ", c.Name, c.Arguments, c.Reason)
		for done := false; !done; {
			ans, err := readLine(ctx, lines)
			if err != nil {
				return nil, err
			}
			switch strings.ToLower(ans) {
			case "y", "yes":
				ds, done = append(ds, loop.Approve(c.ToolCallID)), true
			case "n", "no":
				fmt.Fprint(w, "reason (optional): ")
				reason, err := readLine(ctx, lines)
				if err != nil {
					return nil, err
				}
				ds, done = append(ds, loop.Deny(c.ToolCallID, reason)), true
			case "e", "edit":
				fmt.Fprint(w, "arguments (JSON): ")
				args, err := readLine(ctx, lines)
				if err != nil {
					return nil, err
				}
				if !json.Valid([]byte(args)) {
					fmt.Fprint(w, "not JSON; [y/n/e] ")
					continue
				}
				ds, done = append(ds, loop.ApproveWith(c.ToolCallID, args)), true
			default:
				fmt.Fprint(w, "y, n or e: ")
			}
		}
	}
	for i := range ds {
		ds[i].By = "lode chat"
	}
	return ds, nil
}

func readLine(ctx context.Context, lines <-chan string) (string, error) {
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case l, ok := <-lines:
		if !ok {
			return "", io.EOF
		}
		return strings.TrimSpace(l), nil
	}
}

// resume records ds on thread and goes on with the run.
func (a *agent) resume(ctx context.Context, thread ledger.State, ds []artifact.Decision) error {
	a.printer.partial() // an earlier turn's unfinished text is not this one's
	_, err := a.step.Resume(ctx, thread, a.prov, ds)
	_ = a.step.Flush(context.WithoutCancel(ctx))
	a.printer.endLine()
	a.printer.summary() // the answer after a decision is spent here, not in the next one's line
	noteStop(thread, err)
	return explain(err, a.cfg, a.baseURL)
}
