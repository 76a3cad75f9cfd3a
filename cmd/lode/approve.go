package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	toolpkg "github.com/lodeworks/lode/tool"
	xtool "github.com/lodeworks/lode/x/tool"
)

// registerStore adds --store, the ledger that lets a paused run resume.
func (o *options) registerStore(fs *flag.FlagSet) {
	fs.StringVar(&o.store, "store", "", "directory of the ledger that keeps threads, so that a run paused for approval can be resumed (default: store in lode.yaml; none keeps the thread in memory)")
}

// storeDir is --store, or store in lode.yaml.
func storeDir(o *options, cfg *Config) string {
	if o.store != "" {
		return o.store
	}
	return cfg.Store
}

// approvalOptions gate destructive tools and those lode.yaml's approve:
// names (tools, or packs and MCP servers by name): each such call pauses
// the run until a person decides.
func approvalOptions(cfg *Config) []xtool.HandlerOption {
	names := cfg.Approve
	// lode mounts a pack's and a server's tools as NAME__tool.
	byPrefix := func(_ context.Context, t toolpkg.Tool, _ artifact.ToolCall) (string, bool) {
		for _, n := range names {
			if strings.HasPrefix(t.Name, n+toolpkg.Separator) {
				return fmt.Sprintf("approve: in lode.yaml names %s", n), true
			}
		}
		return "", false
	}
	return []xtool.HandlerOption{xtool.WithApprover(xtool.AskLater), xtool.WithApprovalFor(names...), xtool.WithApprovalRule(byPrefix)}
}

// newThread is a thread of the store at dir, or an in-memory one.
func newThread(ctx context.Context, dir string) (ledger.State, func(), error) {
	if dir == "" {
		return ledger.NewThread(), func() {}, nil
	}
	s, err := file.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	st, err := s.Create(ctx)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return st, func() { s.Close() }, nil
}

// pausedError lists on w the calls that wait for approval and returns
// the error that says what to type next.
func pausedError(w io.Writer, pe *loop.PendingError, dir string) error {
	fmt.Fprintf(w, "%d tool call(s) wait for approval:\n", len(pe.Calls))
	for _, c := range pe.Calls {
		fmt.Fprintf(w, "  %s  %s %s  (%s)\n", c.ToolCallID, c.Name, c.Arguments, c.Reason)
	}
	if dir == "" {
		return errors.New("the run paused for approval, and its thread was kept in memory; run again with --store DIR (or store: in lode.yaml) to resume it later")
	}
	return fmt.Errorf("the run paused for approval; decide with: lode resume --store %s %s approve:ID | deny:ID=REASON | edit:ID=JSON ...", dir, pe.Thread)
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
	_, err := a.step.Resume(ctx, thread, a.prov, ds)
	_ = a.step.Flush(context.WithoutCancel(ctx))
	a.printer.endLine()
	return explain(err, a.cfg, a.baseURL)
}
