package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// The test binary stands in for the command: each invocation below is a
// process of its own, sharing only the store directory.
func TestMain(m *testing.M) {
	if os.Getenv("APPROVAL_EXAMPLE_AS_COMMAND") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func command(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "APPROVAL_EXAMPLE_AS_COMMAND=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestDeletesOnlyAfterApprovalFromASecondProcess(t *testing.T) {
	store, work := t.TempDir(), t.TempDir()
	for _, f := range []string{"old.log", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(work, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out := command(t, "-store", store, "-dir", work, "start")
	m := regexp.MustCompile(`paused: thread (\S+) waits for approval`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("first process did not pause:\n%s", out)
	}
	want := "paused: thread " + m[1] + " waits for approval\n" +
		`  call_a: delete_file {"path":"old.log"} (the tool is marked destructive)` + "\n" +
		`  call_b: delete_file {"path":"notes.txt"} (the tool is marked destructive)` + "\n"
	if out != want {
		t.Fatalf("first process:\n%s\nwant\n%s", out, want)
	}
	for _, f := range []string{"old.log", "notes.txt"} {
		if _, err := os.Stat(filepath.Join(work, f)); err != nil {
			t.Fatalf("%s is gone before anyone approved: %v", f, err)
		}
	}

	out = command(t, "-store", store, "-dir", work, "resume", m[1], "approve:call_a", "deny:call_b=I still need my notes")
	// A denial is stored with the decisions, before the approved call runs.
	want = "result call_b: the call to delete_file was denied by the person approving tool calls; it did not run. Their reason: I still need my notes\n" +
		"result call_a: deleted old.log\n" +
		"model: Done: I removed what you approved.\n"
	if out != want {
		t.Fatalf("second process:\n%s\nwant\n%s", out, want)
	}
	if _, err := os.Stat(filepath.Join(work, "old.log")); !os.IsNotExist(err) {
		t.Fatalf("old.log was approved but not deleted: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, "notes.txt")); err != nil {
		t.Fatalf("notes.txt was denied but is gone: %v", err)
	}
}
