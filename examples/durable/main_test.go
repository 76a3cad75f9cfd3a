package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary stands in for the command, so that the run is a process
// of its own, killed with SIGKILL inside its tool.
func TestMain(m *testing.M) {
	if os.Getenv("DURABLE_EXAMPLE_AS_COMMAND") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "DURABLE_EXAMPLE_AS_COMMAND=1")
	return cmd
}

func TestARunKilledInsideItsToolIsRecovered(t *testing.T) {
	store := t.TempDir()
	start := command("-store", store, "-hang", "start")
	stdout, err := start.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := start.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = start.Process.Kill(); _ = start.Wait() })
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "fetching ") {
	}
	if err := start.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = start.Wait()

	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := command("-store", store, "recover").CombinedOutput()
		if err != nil {
			t.Fatalf("recover: %v\n%s", err, out)
		}
		if s := string(out); s != "nothing to recover\n" {
			// The idempotent fetch runs again inside the recovery, before
			// the recovery is printed.
			if !strings.HasPrefix(s, "fetching https://example.org/\nrecovered ") || !strings.Contains(s, " from calls (calls [call_1], run again [call_1]), after ") ||
				!strings.HasSuffix(s, "\nFetched: the page says: hello\n") {
				t.Fatalf("recover:\n%s", s)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed run's lease never expired")
		}
	}
}
