package pgtest

import "syscall"

// sysProcAttr runs a child as cred (nil: as we are), in its own process
// group, killed if the test process dies first.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
