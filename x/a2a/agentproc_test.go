package a2a_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// startAgentProcess starts cmd, an agent that prints "listening PORT" and
// serves until its stdin ends, and returns its base URL and the scanner
// of the lines it prints after that one. The test's cleanup ends it.
func startAgentProcess(t *testing.T, cmd *exec.Cmd, name string) (string, *bufio.Scanner) {
	t.Helper()
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("%s printed nothing: %v", name, sc.Err())
	}
	port, ok := strings.CutPrefix(sc.Text(), "listening ")
	if !ok {
		t.Fatalf("%s printed %q", name, sc.Text())
	}
	return "http://127.0.0.1:" + port, sc
}
