// Command evals runs an eval suite over lode's built-in packs offline: each
// case replays a cassette recorded once against a scripted
// chat-completions server, checks the tool calls, refusals, typed answer,
// text and budgets, and the run prints a table (go test writes the JSON
// and HTML reports too).
package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lodeworks/lode/x/eval"
)

// testdata goes into the binary, so that the command runs from any
// folder (go run ./examples/evals from the repository's root, too).
//
//go:embed testdata/workspace testdata/cassettes
var testdata embed.FS

func main() {
	code, err := runMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, "evals:", err)
	}
	os.Exit(code)
}

func runMain() (int, error) {
	tmp, err := os.MkdirTemp("", "evals")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(tmp)
	data, err := fs.Sub(testdata, "testdata")
	if err != nil {
		return 1, err
	}
	if err := os.CopyFS(tmp, data); err != nil {
		return 1, err
	}
	s := Suite(filepath.Join(tmp, "workspace"), Cassettes{Dir: filepath.Join(tmp, "cassettes")})
	r := eval.RunSuite(context.Background(), &s)
	_ = r.WriteTable(os.Stdout)
	if r.Failed() > 0 {
		return 1, nil
	}
	return 0, nil
}
