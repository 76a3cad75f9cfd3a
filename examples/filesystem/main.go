// Command filesystem gives a scripted model the filesystem pack, confined
// to a temporary directory: it writes a file, edits it, reads it back with
// line numbers, searches for it, and tries to step outside the root, which
// comes back as an error result it can read. It runs offline.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/loop"
	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/provider/script"
	xtool "github.com/lodeworks/lode/x/tool"
	"github.com/lodeworks/lode/x/tool/filesystem"
)

func main() {
	ctx := context.Background()

	// The application assigns the root; the model only ever sees paths
	// relative to it.
	root, err := os.MkdirTemp("", "lode-workspace-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	fsys, err := filesystem.New(root, filesystem.WithMaxReadBytes(64<<10))
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()

	reg := tool.NewRegistry()
	if err := reg.Mount(ctx, fsys); err != nil {
		log.Fatal(err)
	}

	call := func(id, name, args string) script.Step { return script.Call(id, "filesystem__"+name, args) }
	model := script.Play(
		call("1", "write", `{"path": "notes/todo.md", "content": "- write the report\n- send the report\n"}`),
		call("2", "edit", `{"path": "notes/todo.md", "old_string": "report", "new_string": "summary"}`),
		call("3", "edit", `{"path": "notes/todo.md", "old_string": "write the report", "new_string": "write the summary"}`),
		call("4", "read", `{"path": "notes/todo.md", "line_numbers": true}`),
		call("5", "search", `{"query": "summary"}`),
		call("6", "read", `{"path": "../../etc/passwd"}`),
		script.Text("The to-do list now says to write the summary."),
	)
	step := loop.New(
		loop.WithHandlers(xtool.NewHandler(reg)),
		loop.WithInvokeOptions(xtool.WithFilteredTools(reg, nil)),
	)
	st, err := step.Run(ctx, ledger.NewThread(), model)
	if err != nil {
		log.Fatal(err)
	}
	for _, turn := range st.Turns() {
		for _, a := range turn.Artifacts {
			switch a := a.(type) {
			case artifact.ToolCall:
				fmt.Printf("> %s %s\n", a.Name, a.Arguments)
			case artifact.ToolResult:
				status := "ok"
				if a.IsError {
					status = "error"
				}
				fmt.Printf("< %s:\n%s\n", status, a.Content)
			case artifact.Text:
				fmt.Println("model:", a.Content)
			}
		}
	}
}
