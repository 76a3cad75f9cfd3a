// Command approval is an agent that deletes files only after a person
// approves, and the person answers from another process. The first
// invocation runs the agent until it pauses; the pending deletions are in
// the ledger (a file store) and nowhere else. A second invocation, later,
// opens the same store, records the decisions and finishes the run:
//
//	mkdir -p WORK && touch WORK/old.log WORK/notes.txt
//	go run ./examples/approval -store DIR -dir WORK start
//	go run ./examples/approval -store DIR -dir WORK resume THREAD approve:call_a 'deny:call_b=keep it'
//
// The model is scripted, so it runs offline: it asks to delete old.log
// (call_a) and notes.txt (call_b) in WORK, so the two files must be there
// for the approved deletion to succeed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "approval:", err)
		os.Exit(1)
	}
}

// agent is the step: a delete_file tool confined to dir, marked
// destructive, and an approver that leaves every such call to a person.
func agent(dir string) (*loop.Step, *os.Root, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	type in struct {
		Path string `json:"path" jsonschema:"the file to delete, relative to the work directory"`
	}
	reg := tool.NewRegistry()
	err = tool.RegisterFunc(reg, "delete_file", "Delete a file of the work directory.",
		func(_ context.Context, a in) (string, error) {
			if err := root.Remove(a.Path); err != nil {
				return "", err
			}
			return "deleted " + a.Path, nil
		}, tool.WithHints(tool.Hints{Destructive: true}))
	if err != nil {
		root.Close()
		return nil, nil, err
	}
	return loop.New(
		loop.WithHandlers(xtool.NewHandler(reg, xtool.WithApprover(xtool.PauseForDecision))),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	), root, nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("approval", flag.ContinueOnError)
	storeDir := fs.String("store", "", "the ledger directory")
	workDir := fs.String("dir", "", "the directory the agent may delete in")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *storeDir == "" || *workDir == "" || fs.NArg() == 0 {
		return errors.New("usage: approval -store DIR -dir WORK start | resume THREAD approve:ID | deny:ID=REASON | edit:ID=JSON ...")
	}
	store, err := file.Open(*storeDir)
	if err != nil {
		return err
	}
	defer store.Close()
	step, root, err := agent(*workDir)
	if err != nil {
		return err
	}
	defer root.Close()

	var st *ledger.StoredThread
	switch fs.Arg(0) {
	case "start":
		st, err = store.Create(ctx, ledger.WithTurns(ledger.Turn{Role: ledger.RoleUser,
			Artifacts: []artifact.Artifact{artifact.Text{Content: "Clean up the old logs."}}}))
		if err != nil {
			return err
		}
		model := script.Play(script.Reply(
			artifact.ToolCall{ID: "call_a", Name: "delete_file", Arguments: `{"path":"old.log"}`},
			artifact.ToolCall{ID: "call_b", Name: "delete_file", Arguments: `{"path":"notes.txt"}`},
		))
		_, err = step.Run(ctx, st, model)
	case "resume":
		if fs.NArg() < 2 {
			return errors.New("resume needs a thread ID")
		}
		if st, err = store.Load(ctx, fs.Arg(1)); err != nil {
			return err
		}
		ds, derr := decisions(fs.Args()[2:])
		if derr != nil {
			return derr
		}
		model := script.Play(script.Text("Done: I removed what you approved."))
		_, err = step.Resume(ctx, st, model, ds)
	default:
		return fmt.Errorf("unknown command %q", fs.Arg(0))
	}
	var pe *loop.PendingError
	if errors.As(err, &pe) {
		fmt.Fprintf(out, "paused: thread %s waits for approval\n", st.ID())
		for _, c := range pe.Calls {
			fmt.Fprintf(out, "  %s: %s %s (%s)\n", c.ToolCallID, c.Name, c.Arguments, c.Reason)
		}
		return nil
	}
	if err != nil {
		return err
	}
	for _, t := range st.Turns() {
		for _, a := range t.Artifacts {
			switch a := a.(type) {
			case artifact.ToolResult:
				fmt.Fprintf(out, "result %s: %s\n", a.ToolCallID, a.Content)
			case artifact.Text:
				if t.Role == ledger.RoleAssistant {
					fmt.Fprintf(out, "model: %s\n", a.Content)
				}
			}
		}
	}
	return nil
}

// decisions reads approve:ID, deny:ID=REASON and edit:ID=JSON.
func decisions(args []string) ([]artifact.Decision, error) {
	var ds []artifact.Decision
	for _, a := range args {
		verb, rest, _ := strings.Cut(a, ":")
		id, val, _ := strings.Cut(rest, "=")
		switch verb {
		case "approve":
			ds = append(ds, loop.Approve(id))
		case "deny":
			ds = append(ds, loop.Deny(id, val))
		case "edit":
			if !json.Valid([]byte(val)) {
				return nil, fmt.Errorf("edit %s: %q is not JSON", id, val)
			}
			ds = append(ds, loop.ApproveWith(id, val))
		default:
			return nil, fmt.Errorf("unknown decision %q: want approve:ID, deny:ID=REASON or edit:ID=JSON", a)
		}
	}
	for i := range ds {
		ds[i].By = "the command line"
	}
	return ds, nil
}
