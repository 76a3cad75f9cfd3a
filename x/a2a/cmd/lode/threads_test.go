package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lodeworks/lode/artifact"
	"github.com/lodeworks/lode/ledger"
	"github.com/lodeworks/lode/ledger/file"
	lodea2a "github.com/lodeworks/lode/x/a2a"
	"github.com/lodeworks/lode/x/cli"
)

// lode threads lists an A2A context as a conversation and leaves out the
// record the server keeps of each task.
func TestThreadsLeavesOutTaskRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "threads")
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := store.Create(t.Context(), ledger.WithID(lodea2a.ContextPrefix+"c1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.Append(ledger.RoleUser, artifact.Text{Content: "what is ticket 7?"}); err != nil {
		t.Fatal(err)
	}
	conv.Close()
	rec, err := store.Create(t.Context(), ledger.WithID(lodea2a.TaskPrefix+"t1"),
		ledger.WithMetadata(map[string]string{lodea2a.TaskKey: `{"version":1,"owner":"","task":{"id":"t1","contextId":"c1"}}`}))
	if err != nil {
		t.Fatal(err)
	}
	rec.Close()
	store.Close()

	var out, errs bytes.Buffer
	if code := cli.Run(t.Context(), []string{"threads", "--store", dir}, cli.WithIO(strings.NewReader(""), &out, &errs)); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], lodea2a.ContextPrefix+"c1 ") {
		t.Fatalf("lode threads printed:\n%s", out.String())
	}
}
