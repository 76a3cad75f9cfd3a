//go:build unix && !linux

package bash

import (
	"os/exec"
	"syscall"
)

// detect returns the only containment outside Linux: the process group.
func detect(string) Containment { return ContainProcessGroup }

func available(c Containment, _ string) bool { return c == ContainProcessGroup }

// jail is one call's containment: the shell leads a session (and so a
// process group) of its own.
type jail struct{}

func (b *Bash) command(command, marker string) (*exec.Cmd, *jail, error) {
	cmd := exec.Command(b.shell, "-c", command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Env = append(b.env[:len(b.env):len(b.env)], MarkerVariable+"="+marker)
	return cmd, &jail{}, nil
}

func (*jail) started(error) {}

// waitExited returns once the shell has exited. Outside Linux it is
// reaped too, so Run's later Wait only reads the status kept.
func waitExited(cmd *exec.Cmd) { _ = cmd.Wait() }

func (*jail) kill(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// cleanup kills what is left of the group. Processes that left it are
// not seen here; the caller reports them when they hold the output.
func (*jail) cleanup(cmd *exec.Cmd) ([]int, bool) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return nil, false
}
