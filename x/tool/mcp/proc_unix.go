//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup starts a stdio server in a process group of its own, so that
// Close can also stop the processes it started (a wrapper such as npx runs
// the real server as its child).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills what is left of a stdio server's process group once the
// server itself has been stopped.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
