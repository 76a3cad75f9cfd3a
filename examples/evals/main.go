// Command evals runs an eval suite over lode's built-in packs offline: each
// case replays a cassette recorded once against a scripted
// chat-completions server, checks the tool calls, refusals, typed answer,
// text and budgets, and the run prints a table (go test writes the JSON
// and HTML reports too).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lodeworks/lode/x/eval"
)

func main() {
	root, err := os.MkdirTemp("", "evals-workspace")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(root)
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "workspace"))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := Suite(root, Cassettes{Dir: filepath.Join("testdata", "cassettes")})
	r := eval.RunSuite(context.Background(), &s)
	_ = r.WriteTable(os.Stdout)
	if r.Failed() > 0 {
		os.Exit(1)
	}
}
