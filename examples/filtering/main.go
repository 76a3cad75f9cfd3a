// Command filtering shows per-role tool filtering: the caller's role is
// thread metadata, a ToolFilter picks the tools each turn offers, and the
// handler refuses any call outside that set — even one the model guesses.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
)

type ticketArgs struct {
	ID int `json:"id" jsonschema:"description=the ticket number"`
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	registry := tool.NewRegistry()
	if err := tool.RegisterFunc(registry, "read_ticket", "Read a ticket",
		func(_ context.Context, in ticketArgs) (string, error) {
			return fmt.Sprintf("ticket %d: the printer is on fire", in.ID), nil
		}, tool.WithHints(tool.Hints{ReadOnly: true})); err != nil {
		return err
	}
	if err := tool.RegisterFunc(registry, "close_ticket", "Close a ticket",
		func(_ context.Context, in ticketArgs) (string, error) {
			return fmt.Sprintf("ticket %d closed", in.ID), nil
		}, tool.WithHints(tool.Hints{Destructive: true})); err != nil {
		return err
	}

	// Viewers get read-only tools; admins get everything.
	byRole := func(_ context.Context, st ledger.State, tools []tool.Tool) []tool.Tool {
		if role, _ := st.Metadata("role"); role == "admin" {
			return tools
		}
		var out []tool.Tool
		for _, t := range tools {
			if t.Hints.ReadOnly {
				out = append(out, t)
			}
		}
		return out
	}

	for _, role := range []string{"viewer", "admin"} {
		// The scripted model tries both tools whatever it is offered.
		prov := script.Play(
			script.Reply(
				artifact.ToolCall{ID: "1", Name: "read_ticket", Arguments: `{"id":7}`},
				artifact.ToolCall{ID: "2", Name: "close_ticket", Arguments: `{"id":7}`},
			),
			script.Text("Done."),
		)
		step := loop.New(
			loop.WithHandlers(xtool.NewHandler(registry)),
			loop.WithInvokeOptions(xtool.WithFilteredTools(registry, byRole)),
		)
		thread := ledger.NewThread(ledger.WithMetadata(map[string]string{"role": role}))
		_ = thread.Append(ledger.RoleUser, artifact.Text{Content: "Read ticket 7, then close it."})
		if _, err := step.Run(context.Background(), thread, prov); err != nil {
			return err
		}
		fmt.Fprintf(w, "== %s\n", role)
		for _, t := range prov.Requests()[0].Tools {
			fmt.Fprintf(w, "offered: %s\n", t.Name)
		}
		for _, a := range thread.Turns()[2].Artifacts {
			r := a.(artifact.ToolResult)
			fmt.Fprintf(w, "%s -> error=%v: %s\n", r.Name, r.IsError, r.Content)
		}
	}
	return nil
}
