package bash

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// Containment names the mechanism that keeps the processes a command
// starts from outliving its call. The strongest one the host allows is
// chosen once per process, at the first New; Bash.Containment reports it.
type Containment string

const (
	// ContainPIDNamespace runs each command in a PID namespace of its own,
	// chosen when the caller may create one (CAP_SYS_ADMIN, as root has).
	// When the call ends the namespace's first process is killed, and the
	// kernel kills every other one, whatever session or group it is in.
	// No process can leave: the kernel lets a process join only its own
	// PID namespace or one below it, root included.
	ContainPIDNamespace Containment = "pid-namespace"
	// ContainUserNamespace is the same inside a user namespace that maps
	// the caller's uid and gid to themselves, which lets a caller without
	// CAP_SYS_ADMIN create the PID namespace. Chosen when the caller is not
	// root and the host allows unprivileged user namespaces; the command
	// sees its own uid, but files of other users as owned by nobody, and
	// setuid programs (sudo) do not gain privileges.
	ContainUserNamespace Containment = "user+pid-namespace"
	// ContainCgroup runs each command in a cgroup v2 leaf of its own,
	// created beside the caller's cgroup and emptied with cgroup.kill.
	// A process allowed to write cgroup.procs elsewhere (root, or the owner
	// of a delegated subtree) can move itself out; the marker scan looks
	// for such processes, kills them and reports them.
	ContainCgroup Containment = "cgroup"
	// ContainScan is the best effort when the host allows none of the
	// above: each command is the leader of a session of its own, and when
	// it ends every process of that session, and every process anywhere
	// that still carries the call's marker (MarkerVariable) in its
	// environment, is killed. A process that starts a new session and also
	// clears the marker from its environment, or whose environment the
	// caller may not read (another user's), is not seen. The outcome is
	// Escaped whenever a process had left the session, since what it
	// started may not have been seen.
	ContainScan Containment = "scan"
	// ContainProcessGroup, on systems other than Linux, kills the command's
	// process group only; processes that leave it (setsid, set -m) survive,
	// and the outcome is Escaped when they still hold the command's output.
	ContainProcessGroup Containment = "process-group"
)

// MarkerVariable is set in every command's environment to a value unique
// to the call, so that the processes it starts can be found after it ends.
const MarkerVariable = "LODE_BASH_CALL"

// cleanupBound bounds the wait for the processes a call leaves to die
// once they have been killed; a process that outlasts it is reported.
const cleanupBound = 5 * time.Second

// newMarker returns a value for MarkerVariable that no other call shares.
func newMarker() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on the systems this package builds on
	return hex.EncodeToString(b[:])
}

// description says what the run tool's caller can rely on when the
// command ends, and nothing more.
func (c Containment) description() string {
	switch c {
	case ContainPIDNamespace, ContainUserNamespace:
		return "when the command ends or times out, every process it started is killed, including ones it put in the " +
			"background or detached (nohup, setsid): nothing it starts outlives the call."
	case ContainCgroup:
		return "when the command ends or times out, every process it started is killed, including ones it put in the " +
			"background or detached (nohup, setsid); only a privileged process that moves itself out of the command's " +
			"cgroup can survive, and the result reports each one it finds."
	case ContainScan:
		return "when the command ends or times out, every process it started is killed that is still in its session or " +
			"still has " + MarkerVariable + " in its environment; a process that starts a new session (setsid) is " +
			"reported in the result, and one that also clears that variable may survive unseen."
	default:
		return "when the command ends or times out, every process still in its process group is killed; processes " +
			"that leave the group (setsid, set -m) survive, and the result says so when they still hold its output."
	}
}

// escapeNote renders what an Escaped outcome tells the model.
func escapeNote(pids []int) string {
	if len(pids) == 0 {
		return "(processes outside the command's containment still held its output and were not waited for; they may still be running)"
	}
	return fmt.Sprintf("(%d process(es) left the command's containment, pids %v; they were killed where possible, "+
		"but processes they started may still be running)", len(pids), pids)
}
