package bash_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lodeworks/lode/tool"
	"github.com/lodeworks/lode/x/tool/bash"
)

func newBash(t *testing.T, opts ...bash.Option) (*bash.Bash, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := bash.New(bash.Sandbox{Dir: dir}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b, dir
}

// run calls Run and fails the test if it does not return within a minute
// (a hang guard, not a speed check).
func run(t *testing.T, b *bash.Bash, command string, timeout time.Duration) *bash.Outcome {
	t.Helper()
	type result struct {
		out *bash.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := b.Run(context.Background(), command, timeout)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Run(%q): %v", command, r.err)
		}
		return r.out
	case <-time.After(time.Minute):
		t.Fatalf("Run(%q) did not return", command)
		return nil
	}
}

func TestNew(t *testing.T) {
	if _, err := bash.New(bash.Sandbox{}); !errors.Is(err, bash.ErrNoSandbox) || !errors.Is(err, tool.ErrNoSandbox) {
		t.Errorf("no dir: %v", err)
	}
	dir := t.TempDir()
	if _, err := bash.New(bash.Sandbox{Dir: filepath.Join(dir, "missing")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := bash.New(bash.Sandbox{Dir: file}); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("file as dir: %v", err)
	}
	for _, env := range []map[string]string{{"": "x"}, {"A=B": "x"}, {"A": "x\x00y"}} {
		if _, err := bash.New(bash.Sandbox{Dir: dir, Env: env}); err == nil || !strings.Contains(err.Error(), "invalid variable") {
			t.Errorf("env %q: %v", env, err)
		}
	}
	if _, err := bash.New(bash.Sandbox{Dir: dir}, bash.WithShell("/no/such/shell")); err == nil {
		t.Error("a missing shell was accepted")
	}
	if _, err := bash.New(bash.Sandbox{Dir: dir}, bash.WithName("a b")); err == nil {
		t.Error("an invalid name was accepted")
	}
	b, err := bash.New(bash.Sandbox{Dir: "."})
	if err != nil {
		t.Fatal(err)
	}
	if wd, _ := os.Getwd(); b.Sandbox().Dir != wd {
		t.Errorf("relative dir not made absolute: %s", b.Sandbox().Dir)
	}
}

func TestRun(t *testing.T) {
	b, dir := newBash(t)
	shell, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		command string
		exit    int
		stdout  string
		stderr  string
		signal  string
	}{
		{"echo hello", 0, "hello\n", "", ""},
		{"echo oops >&2; exit 3", 3, "", "oops\n", ""},
		{"pwd", 0, dir + "\n", "", ""},
		{"echo $HOME", 0, dir + "\n", "", ""},
		{"cat", 0, "", "", ""}, // stdin is empty, not the test's
		{"printf 'a\\xffb'", 0, "a\uFFFDb", "", ""},
		{"no-such-command-xyz", 127, "", shell + ": line 1: no-such-command-xyz: command not found\n", ""},
	}
	for _, tc := range tests {
		out := run(t, b, tc.command, 0)
		if out.ExitCode != tc.exit || out.Stdout != tc.stdout || out.Stderr != tc.stderr || out.Signal != tc.signal {
			t.Errorf("%q: exit %d signal %q stdout %q stderr %q; want %d %q %q %q",
				tc.command, out.ExitCode, out.Signal, out.Stdout, out.Stderr, tc.exit, tc.signal, tc.stdout, tc.stderr)
		}
		if out.Failed() != (tc.exit != 0) {
			t.Errorf("%q: Failed() = %v", tc.command, out.Failed())
		}
	}
}

// TestEnvironment: nothing of the host's environment leaks by default;
// what the application passes does.
func TestEnvironment(t *testing.T) {
	t.Setenv("LODE_TEST_SECRET", "hunter2")
	dir := t.TempDir()
	b, err := bash.New(bash.Sandbox{Dir: dir, Env: map[string]string{"GREETING": "hi", "LANG": "en_US.UTF-8"}})
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, b, "env | grep -v '^_=' | grep -v '^SHLVL=' | grep -v '^"+bash.MarkerVariable+"=' | sort", 0)
	want := "GREETING=hi\nHOME=" + dir + "\nLANG=en_US.UTF-8\nPATH=" + bash.DefaultPath + "\nPWD=" + dir + "\n"
	if out.Stdout != want {
		t.Errorf("environment:\n%s\nwant:\n%s", out.Stdout, want)
	}
	if strings.Contains(out.Stdout, "hunter2") {
		t.Error("the host's secret leaked")
	}
	// Each call carries a marker of its own.
	m1 := run(t, b, "echo $"+bash.MarkerVariable, 0).Stdout
	m2 := run(t, b, "echo $"+bash.MarkerVariable, 0).Stdout
	if len(m1) != 33 || m1 == m2 {
		t.Errorf("markers %q and %q", m1, m2)
	}
}

// dead reports whether pid is gone or a zombie: a killed child whose
// parent died is reaped by init, which may take a moment (or never, when
// PID 1 does not reap).
func dead(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

func TestStopWithADoneContext(t *testing.T) {
	b, _ := newBash(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Run(ctx, "echo late", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a done context: %v", err)
	}
}

// TestHugeOutputIsBounded: 300 MB of output cost a bounded result and
// bounded memory, and the call finishes.
func TestHugeOutputIsBounded(t *testing.T) {
	b, _ := newBash(t, bash.WithMaxOutput(1000))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := run(t, b, `head -c 300000000 /dev/zero; echo -n end >&2`, time.Minute)
	runtime.ReadMemStats(&after)
	if out.ExitCode != 0 || out.StdoutBytes != 300_000_000 || out.StderrBytes != 3 {
		t.Fatalf("outcome: exit %d, %d/%d bytes", out.ExitCode, out.StdoutBytes, out.StderrBytes)
	}
	want := strings.Repeat("\x00", 500) + "\n[... 299999000 bytes cut ...]\n" + strings.Repeat("\x00", 500)
	if out.Stdout != want {
		t.Errorf("stdout is %d bytes, want %d", len(out.Stdout), len(want))
	}
	if out.Stderr != "end" {
		t.Errorf("stderr: %q", out.Stderr)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d bytes for 300 MB of output", alloc)
	}
}

func TestOutputCutOnCharacterBoundaries(t *testing.T) {
	b, _ := newBash(t, bash.WithMaxOutput(11))
	// 20 two-byte characters: the head keeps 5 bytes (2 characters and a
	// half, cut back to 2), the tail 6 (3 characters); 40-4-6 are cut.
	out := run(t, b, `for i in $(seq 20); do printf 'é'; done`, 0)
	want := "éé\n[... 30 bytes cut ...]\nééé"
	if out.Stdout != want {
		t.Errorf("stdout %q, want %q", out.Stdout, want)
	}
}

func mount(t *testing.T, b *bash.Bash) *tool.Binding {
	t.Helper()
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	bind, ok := reg.Lookup("bash__run")
	if !ok {
		t.Fatalf("bash__run missing: %v", reg.Tools())
	}
	return bind
}

func TestTool(t *testing.T) {
	b, _ := newBash(t, bash.WithMaxTimeout(time.Second), bash.WithTimeout(time.Second))
	bind := mount(t, b)
	if bind.Tool.Timeout <= time.Second || !bind.Tool.Hints.Destructive {
		t.Errorf("tool: %+v", bind.Tool)
	}
	// The description tells the model what it will get: the limit is on
	// all that is kept of a stream, head and tail together.
	if want := "(up to 32768 bytes of each: its beginning and its end, with a marker saying how much was cut between)"; !strings.Contains(bind.Tool.Description, want) {
		t.Errorf("description %q does not say %q", bind.Tool.Description, want)
	}
	tests := []struct {
		args    string
		content string
		isError bool
	}{
		{`{"command":"echo hi"}`, "exit code: 0\n--- stdout ---\nhi\n", false},
		{`{"command":"true"}`, "exit code: 0\n(no output)", false},
		{`{"command":"echo no >&2; exit 2"}`, "exit code: 2\n--- stderr ---\nno\n", true},
		{`{"command":"sleep 1000","timeout_seconds":0.2}`, "timed out after 200ms; the command was killed\n(no output)", true},
		{`{"command":"echo ok","timeout_seconds":99999999999}`, "exit code: 0\n(the timeout asked for was above the maximum and was lowered to 1s)\n--- stdout ---\nok\n", false},
	}
	for _, tc := range tests {
		out, err := bind.Call(context.Background(), tool.NoSandbox(), tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		res := out.(*tool.Result)
		if res.Content != tc.content || res.IsError != tc.isError {
			t.Errorf("%s:\n got %v %q\nwant %v %q", tc.args, res.IsError, res.Content, tc.isError, tc.content)
		}
	}
	for _, args := range []string{`{}`, `{"command":""}`, `{"command":"x","timeout_seconds":0}`, `{"command":"x","timeout_seconds":-1}`, `{"command":"x","shell":"sh"}`} {
		if _, err := bind.Call(context.Background(), tool.NoSandbox(), args); !errors.As(err, new(*tool.ArgumentsError)) {
			t.Errorf("%s: %v, want an ArgumentsError", args, err)
		}
	}
}

func TestToolPrefixFlat(t *testing.T) {
	b, err := bash.FromOptions(map[string]any{"dir": t.TempDir(), "tool_prefix": "sh_"})
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	if err := reg.Mount(context.Background(), b, tool.Flat()); err != nil {
		t.Fatal(err)
	}
	bind, ok := reg.Lookup("sh_run")
	if !ok {
		t.Fatalf("sh_run missing: %v", reg.Tools())
	}
	out, err := bind.Call(context.Background(), tool.NoSandbox(), `{"command":"echo hi"}`)
	if err != nil || out.(*tool.Result).Content != "exit code: 0\n--- stdout ---\nhi\n" {
		t.Errorf("sh_run: %v %v", out, err)
	}
}

func TestCallDirect(t *testing.T) {
	b, _ := newBash(t)
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"run", map[string]any{}, `run needs "command", a non-empty string`},
		{"run", map[string]any{"command": "  "}, `run needs "command", a non-empty string`},
		{"run", map[string]any{"command": "true", "timeout_seconds": "5"}, `"timeout_seconds" must be a positive number`},
		{"run", map[string]any{"command": "echo a\x00b"}, `"command" holds a NUL byte (at byte 6); a shell command cannot contain one`},
		{"run", map[string]any{"command": "true", "env": 1, "cwd": "/"}, `run takes no argument "cwd"; its arguments are command, timeout_seconds`},
		{"exec", map[string]any{"command": "true"}, `the bash source has no tool "exec"; its only tool is run`},
	}
	for _, tc := range tests {
		out, err := b.Call(context.Background(), tc.name, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if res := out.(*tool.Result); !res.IsError || res.Content != tc.want {
			t.Errorf("%s %v = %+v, want %q", tc.name, tc.args, res, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Call(ctx, "run", map[string]any{"command": "true"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestOptions(t *testing.T) {
	dir := t.TempDir()
	b, err := bash.FromOptions(map[string]any{
		"dir": dir, "env": map[string]any{"A": "1"}, "timeout": "2s", "max_timeout": 5.0, "max_output": 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, b, "echo $A; sleep 1000", 0)
	if !out.TimedOut || out.Timeout != 2*time.Second || out.Stdout != "1\n" {
		t.Errorf("outcome: %+v", out)
	}
	if out := run(t, b, "true", time.Hour); !out.Clamped || out.Timeout != 5*time.Second {
		t.Errorf("max_timeout: %+v", out)
	}
	bad := []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"timeout": "1s"}, "bash: option dir is required: the sandbox directory commands run in"},
		{map[string]any{"dir": 3}, "bash: option dir must be a path, got 3"},
		{map[string]any{"dir": dir, "cwd": "/"}, `bash: unknown option "cwd"; the options are dir, env, max_output, max_timeout, shell, timeout, tool_prefix`},
		{map[string]any{"dir": dir, "tool_prefix": 1}, "bash: option tool_prefix must be a string, got int"},
		{map[string]any{"dir": dir, "env": []any{"A=1"}}, "bash: option env must be a map of names to strings, got []interface {}"},
		{map[string]any{"dir": dir, "env": map[string]any{"A": 1}}, "bash: option env.A must be a string, got int"},
		{map[string]any{"dir": dir, "timeout": "soon"}, `bash: option timeout must be a positive duration such as "30s", got "soon"`},
		{map[string]any{"dir": dir, "max_timeout": -1}, `bash: option max_timeout must be a duration such as "30s" or a number of seconds up to a day, got -1`},
		{map[string]any{"dir": dir, "max_timeout": 86401}, `bash: option max_timeout must be a duration such as "30s" or a number of seconds up to a day, got 86401`},
		{map[string]any{"dir": dir, "max_timeout": "24h0m1s"}, `bash: option max_timeout must be a duration such as "30s" or a number of seconds up to a day, got 24h0m1s`},
		{map[string]any{"dir": dir, "timeout": "2562047h"}, `bash: option timeout must be a duration such as "30s" or a number of seconds up to a day, got 2562047h`},
		{map[string]any{"dir": dir, "timeout": 1e-12}, `bash: option timeout must be a duration such as "30s" or a number of seconds up to a day, got 1e-12`},
		{map[string]any{"dir": dir, "max_output": 1.5}, "bash: option max_output must be an integer from 1 to 1073741824, got 1.5"},
	}
	for _, tc := range bad {
		if err := b.ValidateOptions(tc.opts); err == nil || err.Error() != tc.want {
			t.Errorf("ValidateOptions(%v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
	if err := b.ValidateOptions(nil); err != nil {
		t.Errorf("empty options: %v", err)
	}
	for _, good := range []map[string]any{{"dir": dir, "max_timeout": "24h"}, {"dir": dir, "max_timeout": 86400}, {"dir": dir, "timeout": 0.5}} {
		if err := b.ValidateOptions(good); err != nil {
			t.Errorf("ValidateOptions(%v): %v", good, err)
		}
	}
	if _, err := bash.FromOptions(nil); err == nil || err.Error() != "bash: option dir is required: the sandbox directory commands run in" {
		t.Errorf("FromOptions without dir: %v", err)
	}
	if _, err := bash.FromOptions(map[string]any{"dir": filepath.Join(dir, "missing")}); err == nil {
		t.Error("FromOptions with a missing dir succeeded")
	}
}

// TestLargestMaxTimeout: a maximum at the largest Duration neither wraps
// the tool's own timeout round to a negative one (which the handler would
// replace by its short default) nor turns a model's huge timeout_seconds
// into the default.
func TestLargestMaxTimeout(t *testing.T) {
	b, _ := newBash(t, bash.WithMaxTimeout(math.MaxInt64))
	tools, err := b.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := tools[0].Timeout; got != math.MaxInt64 {
		t.Errorf("tool timeout = %d, want %d", got, int64(math.MaxInt64))
	}
	for _, secs := range []float64{1e300, math.MaxInt64 / 1e9, math.Inf(1)} {
		out, err := b.Call(context.Background(), "run", map[string]any{"command": "echo ok", "timeout_seconds": secs})
		if err != nil {
			t.Fatal(err)
		}
		res := out.(*tool.Result)
		o := res.Value.(bash.Outcome)
		if res.IsError || o.Timeout != math.MaxInt64 || o.Clamped || o.Stdout != "ok\n" {
			t.Errorf("timeout_seconds %g: %+v", secs, o)
		}
	}
	// With the default maximum, the same ask is lowered to it and says so.
	d, _ := newBash(t)
	out, err := d.Call(context.Background(), "run", map[string]any{"command": "true", "timeout_seconds": 1e300})
	if err != nil {
		t.Fatal(err)
	}
	if o := out.(*tool.Result).Value.(bash.Outcome); !o.Clamped || o.Timeout != bash.DefaultMaxTimeout {
		t.Errorf("default maximum: %+v", o)
	}
	out, _ = d.Call(context.Background(), "run", map[string]any{"command": "true", "timeout_seconds": math.NaN()})
	if res := out.(*tool.Result); !res.IsError || res.Content != `"timeout_seconds" must be a positive number` {
		t.Errorf("NaN timeout: %+v", res)
	}
}
