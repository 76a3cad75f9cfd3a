package bash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lodeworks/lode/tool"
)

// DefaultName is the name the shell is mounted under.
const DefaultName = "bash"

// Defaults; a zero option value means the default.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMaxTimeout = 10 * time.Minute
	DefaultMaxOutput  = 32 << 10 // bytes kept of each of stdout and stderr
	// DefaultPath is the PATH commands run with unless Sandbox.Env sets one.
	DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// drainGrace is how long output is still read after the command and what
// it left have been killed; only a process that escaped containment can
// hold the pipes open longer, and it is not waited for.
const drainGrace = time.Second

// ErrNoSandbox is returned by New for a Sandbox without a directory: there
// is no default, so no sandbox means no execution.
var ErrNoSandbox = fmt.Errorf("bash: the sandbox has no directory; the application must assign one: %w", tool.ErrNoSandbox)

// Sandbox is where commands run, as the application configures it.
type Sandbox struct {
	// Dir is the working directory and HOME of every command. Required.
	Dir string
	// Env is added to the minimal environment (PATH, HOME, PWD, LANG) and
	// overrides it. Nothing of the host's environment is passed otherwise.
	Env map[string]string
}

// Name identifies the sandbox, so a Sandbox is a tool.Sandbox.
func (s Sandbox) Name() string { return "bash:" + s.Dir }

// Option configures a Bash.
type Option func(*Bash)

// WithName sets the source name (default "bash"): the tool is "<name>__run".
func WithName(name string) Option { return func(b *Bash) { b.name = name } }

// WithToolPrefix declares the tool as prefix+"run" (say "sh_run"), for a
// flat mount beside other packs, as a pack catalog does.
func WithToolPrefix(prefix string) Option { return func(b *Bash) { b.prefix = prefix } }

// WithShell sets the shell, run as `shell -c command` (default: bash from
// PATH, else sh).
func WithShell(path string) Option { return func(b *Bash) { b.shell = path } }

// WithTimeout sets the timeout of a call that gives none (default 30s).
func WithTimeout(d time.Duration) Option { return func(b *Bash) { b.timeout = d } }

// WithMaxTimeout bounds the timeout a call may ask for (default 10m).
func WithMaxTimeout(d time.Duration) Option { return func(b *Bash) { b.maxTimeout = d } }

// withContainment forces a containment instead of the one detected; New
// fails when the host does not allow it. Tests use it to cover each one.
func withContainment(c Containment) Option { return func(b *Bash) { b.containment = c } }

// WithMaxOutput bounds the bytes kept of each of stdout and stderr (default
// 32 KiB): the first and the last half, with a marker saying how much was
// cut between them.
func WithMaxOutput(n int) Option { return func(b *Bash) { b.maxOutput = n } }

// Bash runs shell commands in a sandbox directory, as a Go API (Run) and as
// a tool source with one tool, "run". Each command runs under the
// containment the host allows (see Containment); when it ends — by
// exiting, by its timeout or by the caller's context — every process it
// started that the containment holds is killed, and dead, before Run
// returns. It is safe for concurrent use.
type Bash struct {
	name       string
	prefix     string
	sb         Sandbox
	shell      string
	timeout    time.Duration
	maxTimeout time.Duration
	maxOutput  int
	env        []string
	// containment is detected in New unless an option forced one.
	containment Containment
}

// New checks the sandbox and returns a Bash that runs commands in it. An
// empty Dir is ErrNoSandbox; a Dir that is not a directory, an invalid
// environment or a missing shell is an error too. The first New of a
// process detects the containment the host allows, which starts the shell
// once or twice.
func New(sb Sandbox, opts ...Option) (*Bash, error) {
	if sb.Dir == "" {
		return nil, ErrNoSandbox
	}
	b := &Bash{}
	for _, o := range opts {
		o(b)
	}
	if b.name == "" {
		b.name = DefaultName
	}
	if err := tool.ValidateName(b.name); err != nil {
		return nil, fmt.Errorf("bash: name: %w", err)
	}
	dir, err := filepath.Abs(sb.Dir)
	if err != nil {
		return nil, fmt.Errorf("bash: sandbox directory: %w", err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("bash: sandbox directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("bash: sandbox directory %s is not a directory", dir)
	}
	sb.Dir = dir
	b.sb = sb
	env := map[string]string{"PATH": DefaultPath, "HOME": dir, "PWD": dir, "LANG": "C.UTF-8"}
	for k, v := range sb.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("bash: sandbox environment: invalid variable %q", k)
		}
		env[k] = v
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		b.env = append(b.env, k+"="+env[k])
	}
	if b.shell == "" {
		if b.shell, err = exec.LookPath("bash"); err != nil {
			b.shell, err = exec.LookPath("sh")
		}
		if err != nil {
			return nil, fmt.Errorf("bash: no shell found (neither bash nor sh): %w", err)
		}
	} else if b.shell, err = exec.LookPath(b.shell); err != nil {
		return nil, fmt.Errorf("bash: shell: %w", err)
	}
	// The shell is run by path from inside a namespace, where the
	// command's PATH applies.
	if b.shell, err = filepath.Abs(b.shell); err != nil {
		return nil, fmt.Errorf("bash: shell: %w", err)
	}
	if b.containment == "" {
		b.containment = detect(b.shell)
	} else if !available(b.containment, b.shell) {
		return nil, fmt.Errorf("bash: containment %q is not available on this host", b.containment)
	}
	if b.timeout <= 0 {
		b.timeout = DefaultTimeout
	}
	if b.maxTimeout <= 0 {
		b.maxTimeout = DefaultMaxTimeout
	}
	b.timeout = min(b.timeout, b.maxTimeout)
	if b.maxOutput <= 0 {
		b.maxOutput = DefaultMaxOutput
	}
	return b, nil
}

// Name returns the source name.
func (b *Bash) Name() string { return b.name }

// Sandbox returns the sandbox commands run in, with Dir made absolute.
func (b *Bash) Sandbox() Sandbox { return b.sb }

// Containment returns how this Bash keeps what a command starts from
// outliving its call: the strongest mechanism the host allowed when the
// process built its first Bash.
func (b *Bash) Containment() Containment { return b.containment }

// Outcome is what a command did.
type Outcome struct {
	// ExitCode is the exit status; -1 when the command was killed by a
	// signal or did not finish.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that killed the command, if one did. In a
	// PID namespace the command's shell is not the process Run waits for,
	// and a shell killed by signal n shows as exit code 128+n, as shells
	// report it.
	Signal string `json:"signal,omitempty"`
	// TimedOut is set when the timeout killed the command.
	TimedOut bool `json:"timed_out,omitempty"`
	// Stopped is set when the caller's context ended the command.
	Stopped bool `json:"stopped,omitempty"`
	// Stdout and Stderr are the output, head and tail kept within the
	// limit; StdoutBytes and StderrBytes count all of it.
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
	// Escaped is set when processes the command started may have
	// outlived the call: some were found outside its containment
	// (EscapedPIDs; each was killed unless the kernel refused), or
	// processes it could not see still held its output, which was then
	// not waited for. Under ContainScan it is also set whenever a process
	// had left the command's session, since what that process started may
	// have gone unseen. When it is not set, every process the containment
	// holds is dead.
	Escaped bool `json:"escaped,omitempty"`
	// EscapedPIDs lists the processes found outside the containment.
	EscapedPIDs []int `json:"escaped_pids,omitempty"`
	// Containment is the mechanism the command ran under.
	Containment Containment   `json:"containment"`
	Timeout     time.Duration `json:"timeout"`
	Duration    time.Duration `json:"duration"`
	// Clamped is set when the timeout asked for was above the maximum.
	Clamped bool `json:"clamped,omitempty"`
}

// timeoutNowKey is the context key of a channel whose close times the
// call out at once, as if its timeout had passed (tests only).
type timeoutNowKey struct{}

// Failed reports whether the command did not exit with status 0.
func (o *Outcome) Failed() bool { return o.ExitCode != 0 || o.TimedOut || o.Stopped || o.Signal != "" }

// Run runs command with `shell -c` in the sandbox. A zero timeout means
// the default; a timeout above the maximum is lowered to it. The command's
// stdin is empty. An error means the command could not be started; what it
// did, failures included, is in the Outcome.
func (b *Bash) Run(ctx context.Context, command string, timeout time.Duration) (*Outcome, error) {
	out := &Outcome{Timeout: timeout, Containment: b.containment}
	if timeout <= 0 {
		out.Timeout = b.timeout
	}
	if out.Timeout > b.maxTimeout {
		out.Timeout, out.Clamped = b.maxTimeout, true
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("bash: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("bash: %w", err)
	}
	// The command writes straight into pipes we read ourselves, so Wait
	// returns when the shell exits, whoever else still holds the pipes.
	cmd, jail, err := b.command(command, newMarker())
	if err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return nil, err
	}
	cmd.Dir = b.sb.Dir
	cmd.Stdout, cmd.Stderr = outW, errW
	start := time.Now()
	err = cmd.Start()
	jail.started(err)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("bash: start %s: %w", b.shell, err)
	}

	stdout, stderr := newCapture(b.maxOutput), newCapture(b.maxOutput)
	var readers sync.WaitGroup
	readers.Go(func() { _, _ = io.Copy(stdout, outR) })
	readers.Go(func() { _, _ = io.Copy(stderr, errR) })
	// The shell is reaped only after the cleanup, so that its pid, which
	// is also its session and group ID, cannot be reused meanwhile.
	waited := make(chan struct{})
	go func() { waitExited(cmd); close(waited) }()

	timer := time.NewTimer(out.Timeout)
	defer timer.Stop()
	// A test may end the call as the timeout would, once the command has
	// got as far as it must (a timer alone cannot know that on a loaded
	// machine).
	early, _ := ctx.Value(timeoutNowKey{}).(<-chan struct{})
	select {
	case <-waited:
	case <-early:
		out.TimedOut = true
		jail.kill(cmd)
		<-waited
	case <-timer.C:
		out.TimedOut = true
		jail.kill(cmd)
		<-waited
	case <-ctx.Done():
		out.Stopped = true
		jail.kill(cmd)
		<-waited
	}
	// Whatever the command left running goes with it; their ends of the
	// pipes close as they die.
	out.EscapedPIDs, out.Escaped = jail.cleanup(cmd)
	out.Escaped = out.Escaped || len(out.EscapedPIDs) > 0
	_ = cmd.Wait() // the exit status is read from ProcessState
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	grace := time.NewTimer(drainGrace)
	select {
	case <-drained:
		grace.Stop()
	case <-grace.C:
		out.Escaped = true
		now := time.Now()
		_ = outR.SetReadDeadline(now)
		_ = errR.SetReadDeadline(now)
		<-drained
	}
	outR.Close()
	errR.Close()
	out.Duration = time.Since(start)

	out.ExitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && !out.TimedOut && !out.Stopped {
		out.Signal = ws.Signal().String()
	}
	out.Stdout, out.Stderr = stdout.String(), stderr.String()
	out.StdoutBytes, out.StderrBytes = stdout.total, stderr.total
	return out, nil
}

// Text renders an outcome as the run tool shows it to a model.
func (o *Outcome) Text() string {
	var sb strings.Builder
	switch {
	case o.TimedOut:
		fmt.Fprintf(&sb, "timed out after %s; the command was killed", o.Timeout)
	case o.Stopped:
		sb.WriteString("stopped before it finished; the command was killed")
	case o.Signal != "":
		fmt.Fprintf(&sb, "killed by signal: %s", o.Signal)
	default:
		fmt.Fprintf(&sb, "exit code: %d", o.ExitCode)
	}
	if o.Clamped {
		fmt.Fprintf(&sb, "\n(the timeout asked for was above the maximum and was lowered to %s)", o.Timeout)
	}
	if o.Escaped {
		sb.WriteString("\n")
		sb.WriteString(escapeNote(o.EscapedPIDs))
	}
	if o.StdoutBytes > 0 {
		sb.WriteString("\n--- stdout ---\n")
		sb.WriteString(o.Stdout)
	}
	if o.StderrBytes > 0 {
		sb.WriteString("\n--- stderr ---\n")
		sb.WriteString(o.Stderr)
	}
	if o.StdoutBytes == 0 && o.StderrBytes == 0 {
		sb.WriteString("\n(no output)")
	}
	return sb.String()
}

// RunArgs are the arguments of the run tool.
type RunArgs struct {
	Command        string  `json:"command" jsonschema:"minLength=1" jsonschema_description:"The shell command to run (bash -c); stdin is empty"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"exclusiveMinimum=0" jsonschema_description:"Kill the command after this many seconds (default and maximum set by the application)"`
}

// Tools lists the run tool.
func (b *Bash) Tools(context.Context) ([]tool.Tool, error) {
	schema, err := tool.SchemaFor[RunArgs]()
	if err != nil {
		return nil, err
	}
	desc := fmt.Sprintf("Run a shell command in the working directory %s and return its exit code, stdout and stderr "+
		"(up to %d bytes of each: its beginning and its end, with a marker saying how much was cut between). "+
		"Default timeout %s, maximum %s; %s",
		filepath.Base(b.sb.Dir), b.maxOutput, b.timeout, b.maxTimeout, b.containment.description())
	return []tool.Tool{{
		Name:        b.prefix + "run",
		Description: desc,
		Schema:      schema,
		// A command can reach the network (SendsOut) and print what it
		// fetched (Untrusted), whatever the containment: flow rules must
		// treat it as both.
		Hints: tool.Hints{Destructive: true, OpenWorld: true, SendsOut: true, Untrusted: true},
		// The handler's per-call timeout must not cut a command short of
		// the timeout it may ask for.
		Timeout: addSaturating(b.maxTimeout, 2*(drainGrace+cleanupBound)),
	}}, nil
}

// seconds converts a positive number of seconds to a Duration, the largest
// one for a number beyond it rather than a value wrapped round.
func seconds(s float64) time.Duration {
	if ns := s * float64(time.Second); ns < math.MaxInt64 {
		return time.Duration(ns)
	}
	return math.MaxInt64
}

// addSaturating adds two positive durations, stopping at the largest one.
func addSaturating(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Call runs the run tool. A command that fails, times out or cannot start
// is a *tool.Result with IsError set; an error is returned only for a
// context that was already done.
func (b *Bash) Call(ctx context.Context, name string, args map[string]any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if name != b.prefix+"run" {
		return &tool.Result{IsError: true, Content: fmt.Sprintf("the %s source has no tool %q; its only tool is %srun", b.name, name, b.prefix)}, nil
	}
	command, ok := args["command"].(string)
	if !ok || strings.TrimSpace(command) == "" {
		return &tool.Result{IsError: true, Content: `run needs "command", a non-empty string`}, nil
	}
	if i := strings.IndexByte(command, 0); i >= 0 {
		// The kernel takes arguments as C strings: it would refuse the
		// command with a bare "invalid argument".
		return &tool.Result{IsError: true, Content: fmt.Sprintf(`"command" holds a NUL byte (at byte %d); a shell command cannot contain one`, i)}, nil
	}
	var timeout time.Duration
	if v, present := args["timeout_seconds"]; present && v != nil {
		secs, ok := v.(float64)
		if !ok || !(secs > 0) {
			return &tool.Result{IsError: true, Content: `"timeout_seconds" must be a positive number`}, nil
		}
		timeout = seconds(secs) // Run lowers one above the maximum
	}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if k != "command" && k != "timeout_seconds" {
			return &tool.Result{IsError: true, Content: fmt.Sprintf("run takes no argument %q; its arguments are command, timeout_seconds", k)}, nil
		}
	}
	out, err := b.Run(ctx, command, timeout)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return &tool.Result{IsError: true, Content: "the command could not be started: " + err.Error()}, nil
	}
	return &tool.Result{Content: out.Text(), Value: *out, IsError: out.Failed()}, nil
}
