//go:build linux

package bash_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lodeworks/lode/x/tool/bash"
)

var layers = []bash.Containment{bash.ContainUserNamespace, bash.ContainPIDNamespace, bash.ContainCgroup, bash.ContainScan}

// forEachLayer runs f with a Bash under each containment the host allows;
// the scan is allowed everywhere, so every host tests at least one.
func forEachLayer(t *testing.T, f func(t *testing.T, b *bash.Bash)) {
	if _, err := exec.LookPath("pgrep"); err != nil {
		t.Fatal("these tests need pgrep: install procps (apt-get install procps)")
	}
	for _, c := range layers {
		t.Run(string(c), func(t *testing.T) {
			if !bash.Available(c) {
				t.Skipf("this host does not allow %s", c)
			}
			b, _ := newBash(t, bash.WithContainment(c), bash.WithTimeout(time.Minute))
			if b.Containment() != c {
				t.Fatalf("Containment() = %q, want %q", b.Containment(), c)
			}
			f(t, b)
		})
	}
}

// plant returns a sleep argument no other process has, so /proc tells
// whether the process carrying it is alive.
func plant() string { return fmt.Sprintf("1000.%09d", rand.IntN(1e9)) }

// ready is shell code that waits until sleep runs with arg, so a command
// returns only once what it leaves behind has set itself up (the
// command's own shell holds arg in its command line too, so pgrep matches
// the whole line).
func ready(arg string) string { return readyN(arg, 1) }

// readyN waits until n sleeps run with arg: a command that leaves several
// behind returns only once each has set itself up (a setsid's sleep has
// its own session once it runs as sleep).
func readyN(arg string, n int) string {
	return fmt.Sprintf("until [ \"$(pgrep -fc '^sleep %s$')\" -ge %d ]; do :; done", strings.Replace(arg, ".", "[.]", 1), n)
}

// alive returns the live processes whose command line holds arg; zombies
// are dead, whoever is to reap them.
func alive(arg string) []int {
	var pids []int
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", n, "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(arg)) || dead(pid) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

func killAll(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestNothingOutlivesTheCall: every way of leaving a command behind, under
// each containment. When Run returns, nothing carrying the planted
// argument is alive — checked at once, not after a wait — except where the
// containment says it cannot see, and Escaped is exactly as promised.
func TestNothingOutlivesTheCall(t *testing.T) {
	tests := []struct {
		name    string
		command func(m string) string
		timeout time.Duration
		// What the scan reports, which sees less than the kernel: the
		// processes that left the session (each is killed, and escaped),
		// whether the outcome is Escaped, and how many processes it does
		// not see at all (they survive). Under every other containment,
		// nothing escapes and nothing survives.
		scanPIDs    int
		scanEscaped bool
		scanAlive   int
	}{
		{"background", func(m string) string { return "sleep " + m + " & " + ready(m) }, 0, 0, false, 0},
		{"setsid", func(m string) string { return "setsid sleep " + m + " & " + ready(m) }, 0, 1, true, 0},
		{"job control", func(m string) string { return "set -m; sleep " + m + " & " + ready(m) }, 0, 0, false, 0},
		{"nohup", func(m string) string { return "nohup sleep " + m + " >/dev/null 2>&1 & " + ready(m) }, 0, 0, false, 0},
		{"double fork", func(m string) string { return "(sleep " + m + " &) & " + ready(m) }, 0, 0, false, 0},
		{"setsid -f", func(m string) string { return "setsid -f sleep " + m + "; " + ready(m) }, 0, 1, true, 0},
		{"ignores TERM and HUP", func(m string) string {
			return "(trap '' TERM HUP; exec setsid sleep " + m + ") & " + ready(m)
		}, 0, 1, true, 0},
		// The call is timed out (bash.TimeoutNow) once the command has
		// printed "up" and said so through a fifo, however long that takes.
		{"timeout with escapers", func(m string) string {
			return "setsid sleep " + m + " & set -m; sleep " + m + " & " + readyN(m, 2) + "; echo up; echo up > fifo-" + m + "; sleep " + m
		}, time.Minute, 1, true, 0},
		// Unmarked, in a session of its own, but holding the output: the
		// scan does not find it, and says so from the open pipes.
		{"unmarked holding output", func(m string) string {
			return "setsid env -i sleep " + m + " & " + ready(m)
		}, 0, 0, true, 1},
		// Unmarked, detached and silent: the scan's blind spot.
		{"unmarked and silent", func(m string) string {
			return "setsid env -i sleep " + m + " </dev/null >/dev/null 2>&1 & " + ready(m)
		}, 0, 0, false, 1},
	}
	forEachLayer(t, func(t *testing.T, b *bash.Bash) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				m := plant()
				var out *bash.Outcome
				if tc.timeout > 0 {
					out = runUntilFifo(t, b, tc.command(m), tc.timeout, filepath.Join(b.Sandbox().Dir, "fifo-"+m))
				} else {
					out = run(t, b, tc.command(m), tc.timeout)
				}
				survivors := alive(m)
				t.Cleanup(func() { killAll(alive(m)) })
				if tc.timeout > 0 {
					if !out.TimedOut || out.Stdout != "up\n" {
						t.Errorf("outcome: %+v", out)
					}
				} else if out.ExitCode != 0 {
					t.Errorf("outcome: %+v", out)
				}
				wantEscaped, wantPIDs, wantAlive := false, 0, 0
				if b.Containment() == bash.ContainScan {
					wantEscaped, wantPIDs, wantAlive = tc.scanEscaped, tc.scanPIDs, tc.scanAlive
				}
				if out.Escaped != wantEscaped || len(out.EscapedPIDs) != wantPIDs || out.Containment != b.Containment() {
					t.Errorf("escaped %v %v containment %q; want escaped %v with %d pids", out.Escaped, out.EscapedPIDs, out.Containment, wantEscaped, wantPIDs)
				}
				if len(survivors) != wantAlive {
					t.Errorf("alive after the call: %v, want %d", survivors, wantAlive)
				}
				note := fmt.Sprintf("\n(%d process(es) left the command's containment, pids %v; they were killed where possible, "+
					"but processes they started may still be running)", wantPIDs, out.EscapedPIDs)
				if wantPIDs == 0 {
					note = "\n(processes outside the command's containment still held its output and were not waited for; they may still be running)"
				}
				if strings.Contains(out.Text(), note) != wantEscaped {
					t.Errorf("text: %q", out.Text())
				}
			})
		}
	})
}

// runUntilFifo runs command and times it out as soon as it writes a line
// to the fifo at path; timeout is only a backstop.
func runUntilFifo(t *testing.T, b *bash.Bash, command string, timeout time.Duration, path string) *bash.Outcome {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	now := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		f, err := os.Open(path) // blocks until the command opens it to write
		if err != nil {
			return
		}
		defer f.Close()
		var b [64]byte
		if n, _ := f.Read(b[:]); n > 0 {
			close(now)
		}
	}()
	out, err := b.Run(bash.TimeoutNow(context.Background(), now), command, timeout)
	if err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	// A command that never wrote leaves the reader blocked in open:
	// opening the other end lets it go.
	if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
	<-read
	return out
}

// TestStopKillsEverything: a cancelled context ends the command and all
// it left, under each containment.
func TestStopKillsEverything(t *testing.T) {
	forEachLayer(t, func(t *testing.T, b *bash.Bash) {
		m := plant()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan *bash.Outcome, 1)
		go func() {
			out, err := b.Run(ctx, "sleep "+m+" & "+ready(m)+"; touch started; sleep "+m, time.Minute)
			if err != nil {
				t.Error(err)
			}
			done <- out
		}()
		// Cancel once the command is under way, which it says with a file.
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(b.Sandbox().Dir, "started")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the command did not start")
			}
			runtime.Gosched()
		}
		cancel()
		out := <-done
		t.Cleanup(func() { killAll(alive(m)) })
		if out == nil || !out.Stopped || !out.Failed() || out.ExitCode != -1 || out.Escaped {
			t.Fatalf("outcome: %+v", out)
		}
		if got := out.Text(); got != "stopped before it finished; the command was killed\n(no output)" {
			t.Errorf("text: %q", got)
		}
		if pids := alive(m); len(pids) != 0 {
			t.Errorf("alive after the call: %v", pids)
		}
	})
}

// TestShellSemantics: the command's shell behaves as outside a namespace —
// it can signal itself, and it sees its own uid — under each containment.
func TestShellSemantics(t *testing.T) {
	uid := strconv.Itoa(os.Getuid()) + "\n"
	forEachLayer(t, func(t *testing.T, b *bash.Bash) {
		out := run(t, b, "kill -TERM $$; echo survived", 0)
		ns := b.Containment() == bash.ContainPIDNamespace || b.Containment() == bash.ContainUserNamespace
		if ns && (out.ExitCode != 128+int(syscall.SIGTERM) || out.Signal != "" || out.Stdout != "") {
			t.Errorf("kill $$ in a namespace: %+v", out)
		}
		if !ns && (out.ExitCode != -1 || out.Signal != "terminated" || out.Stdout != "") {
			t.Errorf("kill $$: %+v", out)
		}
		if out := run(t, b, "id -u", 0); out.Stdout != uid {
			t.Errorf("id -u = %q, want %q", out.Stdout, uid)
		}
	})
}

func TestDescriptionFollowsContainment(t *testing.T) {
	want := map[bash.Containment]string{
		bash.ContainUserNamespace: "nothing it starts outlives the call.",
		bash.ContainPIDNamespace:  "nothing it starts outlives the call.",
		bash.ContainCgroup:        "only a privileged process that moves itself out of the command's cgroup can survive",
		bash.ContainScan:          "one that also clears that variable may survive unseen.",
	}
	forEachLayer(t, func(t *testing.T, b *bash.Bash) {
		tools, err := b.Tools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if d := tools[0].Description; !strings.Contains(d, want[b.Containment()]) {
			t.Errorf("description %q does not say %q", d, want[b.Containment()])
		}
	})
}

// TestDetectedIsTheStrongest: New picks the first containment the host
// allows, in order of strength; root is never put in a user namespace.
func TestDetectedIsTheStrongest(t *testing.T) {
	var want bash.Containment
	for _, c := range []bash.Containment{bash.ContainPIDNamespace, bash.ContainUserNamespace, bash.ContainCgroup, bash.ContainScan} {
		if c == bash.ContainUserNamespace && os.Geteuid() == 0 {
			continue
		}
		if bash.Available(c) {
			want = c
			break
		}
	}
	b, _ := newBash(t)
	if b.Containment() != want {
		t.Errorf("detected %q, want %q", b.Containment(), want)
	}
	t.Logf("this host: %s", want)
}

// TestPrivilegedEscapeIsReported: root can move a process out of a cgroup
// (by writing cgroup.procs), but not out of a PID namespace (joining the
// host's is refused). Where the containment allows the move, the escapee
// is found by its marker, killed, and reported; elsewhere the move fails
// or does not leave what the containment holds.
func TestPrivilegedEscapeIsReported(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can try these escapes")
	}
	// The test's own process is in the host's PID namespace.
	joinHost := func(m string) string {
		return fmt.Sprintf("nsenter -t %d -p sleep %s & %s", os.Getpid(), m, ready(m))
	}
	leaveCgroup := func(m string) string {
		return `sh -c 'mnt=$(grep -m1 " - cgroup2 " /proc/self/mountinfo | cut -d" " -f5); ` +
			`cg=$(sed -n "s/^0:://p" /proc/self/cgroup); ` +
			`echo $$ > "$mnt$(dirname "$cg")/cgroup.procs"; exec sleep ` + m + `' & ` + ready(m)
	}
	tests := []struct {
		name    string
		command func(string) string
		escaped map[bash.Containment]bool
	}{
		{"join the host's PID namespace", joinHost, nil},
		{"leave the cgroup", leaveCgroup, map[bash.Containment]bool{bash.ContainCgroup: true}},
	}
	forEachLayer(t, func(t *testing.T, b *bash.Bash) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				m := plant()
				// From a PID namespace nsenter is refused and sleep never
				// runs; the command must not wait for it there.
				command := tc.command(m)
				ns := b.Containment() == bash.ContainUserNamespace || b.Containment() == bash.ContainPIDNamespace
				if ns && strings.HasPrefix(command, "nsenter") {
					command = strings.TrimSuffix(command, ready(m)) + "wait"
				}
				out := run(t, b, command, 0)
				t.Cleanup(func() { killAll(alive(m)) })
				if ns && strings.HasPrefix(command, "nsenter") && !strings.HasPrefix(out.Stderr, "nsenter: ") {
					t.Errorf("nsenter was not refused: %+v", out)
				}
				want := tc.escaped[b.Containment()]
				if out.Escaped != want || len(out.EscapedPIDs) != map[bool]int{true: 1}[want] {
					t.Errorf("escaped %v %v, want %v; %+v", out.Escaped, out.EscapedPIDs, want, out)
				}
				if pids := alive(m); len(pids) != 0 {
					t.Errorf("alive after the call: %v", pids)
				}
			})
		}
	})
}
