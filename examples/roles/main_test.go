package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const viewerList = "calculator__eval, filesystem__glob, filesystem__list, filesystem__read, filesystem__search, filesystem__stat"

// The same file gives the same answers in the loop and over MCP.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, "policy.yaml"); err != nil {
		t.Fatal(err)
	}
	loop, mcp, ok := strings.Cut(out.String(), "== over MCP\n")
	if !ok {
		t.Fatalf("no MCP part:\n%s", out.String())
	}
	// A loop turn's refusal speaks of the turn; an MCP client has none.
	refused := map[string]string{
		loop: `  filesystem__write -> refused: unknown tool "filesystem__write". Tools available in this turn: ` + viewerList + ".\n",
		mcp:  `  filesystem__write -> refused: unknown tool "filesystem__write". Tools available to this caller: ` + viewerList + ".\n",
	}
	for _, part := range []string{loop, mcp} {
		for _, want := range []string{
			refused[part],
			"  filesystem__write -> replaced the content of notes.txt (7 bytes)\n",
			"  calculator__eval -> 42\n",
		} {
			if !strings.Contains(part, want) {
				t.Errorf("lacks %q:\n%s", want, part)
			}
		}
		if n, a := strings.Count(part, "filesystem__write -> replaced"), strings.Count(part, "(a person approves filesystem__write)"); n != 2 || a != 2 {
			t.Errorf("%d writes and %d approvals, want the editor's and the admin's:\n%s", n, a, part)
		}
	}
	if !strings.Contains(mcp, "viewer: tools/list "+viewerList+"\n") {
		t.Errorf("viewer's tools/list:\n%s", mcp)
	}
}

// A policy that names a tool nobody mounted is refused at start.
func TestBadPolicyRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte("roles:\n  viewer:\n    allow:\n      tools: [filesystem__raed]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), &strings.Builder{}, path)
	if err == nil || !strings.Contains(err.Error(), `line 4: role viewer, allow tools "filesystem__raed": no mounted tool matches`) {
		t.Fatalf("run = %v", err)
	}
}

// The command runs from any folder, with its built-in policy.yaml.
func TestRunsFromAnotherFolder(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := runMain(nil); err != nil {
		t.Fatal(err)
	}
	if err := runMain([]string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "usage: roles") {
		t.Fatalf("two arguments: %v", err)
	}
}
