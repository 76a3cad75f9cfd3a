package ledgertest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/lodeworks/lode/ledger"
)

// The crash tests of this package re-run the test binary as a child,
// which does some work on a store and prints a line after each step; the
// parent reads the lines, SIGKILLs the child at a chosen one, and checks
// the store. The helpers below are that machinery, exported so that a
// store's own crash tests, or a suite over the loop, can use it too:
//
//	func TestMyCrash(t *testing.T) {
//		var cfg myConfig
//		if ledgertest.ChildConfig("MY_CRASH", "TestMyCrash", &cfg) {
//			ledgertest.RunChild("my crash child", func(say func(string)) error {
//				// work on the store in cfg.Where, say("step") after each step
//			})
//		}
//		c := ledgertest.StartChild(t, "TestMyCrash", "MY_CRASH", myConfig{Where: dir})
//		c.Await(t, func(line string) bool { return line == "step" })
//		c.Kill(t)
//		// check the store
//	}

// childEnvelope is what the environment variable holds: the test the
// child is for, so that a config meant for one test is never read by
// another, and the config itself.
type childEnvelope struct {
	Test   string
	Config json.RawMessage
}

// ChildConfig reports whether this process is a child that StartChild
// started for the test testName with the environment variable env, and
// if so decodes the config it was given into config. The test calls it
// first thing and, when it reports true, runs the child's work (RunChild)
// instead of the test.
func ChildConfig(env, testName string, config any) bool {
	v := os.Getenv(env)
	if v == "" {
		return false
	}
	var e childEnvelope
	if err := json.Unmarshal([]byte(v), &e); err != nil || e.Test != testName {
		return false
	}
	if err := json.Unmarshal(e.Config, config); err != nil {
		fmt.Fprintf(os.Stderr, "ledgertest: child config in %s: %v\n", env, err)
		os.Exit(3)
	}
	return true
}

// RunChild runs body as the child's work and ends the process: with exit
// status 0 when body returns nil, 3 with the error on stderr otherwise. A
// child that is to be killed where it stands blocks inside body. say
// writes one progress line to the parent, unbuffered, so the line has
// left the process before the next step begins; it is safe to call from
// several goroutines. When the parent dies the child exits too, with
// status 4, so a failed test leaves no process behind. what names the
// child in its error messages.
func RunChild(what string, body func(say func(line string)) error) {
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(3)
	}
	go func() {
		// The parent holds the other end of stdin: it closes when the
		// parent is gone.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(4)
	}()
	var mu sync.Mutex
	say := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Fprintln(os.Stdout, line); err != nil {
			fail(err)
		}
	}
	if err := body(say); err != nil {
		fail(err)
	}
	os.Exit(0)
}

// Child is a running copy of the test binary started by StartChild.
type Child struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	lines  chan string
	read   sync.WaitGroup
	stderr bytes.Buffer
}

// StartChild re-runs the test binary with only the test testName, with
// config as JSON in the environment variable env, where ChildConfig finds
// it. The child's progress lines are read with Await; Kill ends it.
func StartChild(t testing.TB, testName, env string, config any) *Child {
	t.Helper()
	raw, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(childEnvelope{Test: testName, Config: raw})
	if err != nil {
		t.Fatal(err)
	}
	c := &Child{lines: make(chan string, 64)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^"+testName+"$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), env+"="+string(b))
	c.cmd.Stderr = &c.stderr
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.read.Go(func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	})
	return c
}

// Await reads the child's progress lines until done reports true for
// one. A child that stops first fails the test with what it wrote to
// stderr.
func (c *Child) Await(t testing.TB, done func(line string) bool) {
	t.Helper()
	for line := range c.lines {
		if done(line) {
			return
		}
	}
	c.read.Wait()
	err := c.cmd.Wait()
	t.Fatalf("the child stopped (%v) before it got there: %s", err, c.stderr.String())
}

// Kill SIGKILLs the child, checks that it was the kill that ended it, and
// returns the progress lines the child printed that Await had not read:
// they were written before the kill, so their steps were done.
func (c *Child) Kill(t testing.TB) []string {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for line := range c.lines {
		rest = append(rest, line)
	}
	c.read.Wait()
	err := c.cmd.Wait()
	c.stdin.Close()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("the child was not killed (%v): %s", err, c.stderr.String())
	}
	return rest
}

// OpenerOf returns an Opener over the storage at where, opened with open,
// the form the crash tests take a store in.
func OpenerOf(where string, open func(where string) (ledger.Store, error)) Opener {
	return func(t testing.TB) ledger.Store {
		t.Helper()
		s, err := open(where)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// AfterLeases is a clock past every lease the crash tests' children take
// (for at most an hour, on clocks at most an hour ahead): an owner that
// reads it takes a dead child's lease over at once, without waiting for
// the lease to expire in real time.
func AfterLeases() time.Time { return time.Now().Add(3 * time.Hour) }
