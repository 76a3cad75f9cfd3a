// Package bash is a tool source (pack) that runs shell commands in a
// sandbox directory the application assigns: one tool, "run", mounted as
// "bash__run", and a Go API, Run.
//
// There is no default sandbox: New(Sandbox{Dir: ...}) with an empty Dir is
// ErrNoSandbox, so no sandbox means no execution. The sandbox is fixed when
// the Bash is built: the sandbox a registry hands a mounted source's call
// (tool.SandboxFrom) is not consulted, so one Bash serves one sandbox, and
// an application with several mounts a Bash for each. Commands run with
// `bash -c` (or sh) in Dir, with stdin empty and a minimal environment —
// PATH, HOME and PWD (the sandbox directory) and LANG, plus what Sandbox.Env
// adds — so the host's secrets do not leak into them.
//
// No process a command starts may outlive its call. When the command ends
// — it exits, its timeout passes (per call, bounded by a maximum) or the
// caller's context is done — every process it left is killed, and is dead
// before Run returns, however it detached (`&`, nohup, setsid, set -m, a
// double fork). How depends on what the host allows, detected once per
// process at the first New, strongest first, and reported by
// Bash.Containment and in each Outcome:
//
//   - ContainPIDNamespace ("pid-namespace", for a caller with
//     CAP_SYS_ADMIN, such as root) or ContainUserNamespace
//     ("user+pid-namespace", for others where unprivileged user namespaces
//     are allowed): the command runs in a PID namespace of its own, which
//     the kernel empties when its first process dies and which no process
//     can leave. Its first process is a small sh that runs the command's
//     shell and reaps orphans, so `kill $$` works as usual, but a shell
//     killed by signal n shows as exit code 128+n. /proc still shows the
//     host's processes, whose pids the command cannot signal.
//   - ContainCgroup ("cgroup"): a cgroup v2 leaf per call beside the
//     caller's own, emptied with cgroup.kill. A process allowed to write
//     cgroup.procs elsewhere (root, a delegated subtree) can move out.
//   - ContainScan ("scan"), when neither works: the command leads a session
//     of its own, and every process of that session, and every process that
//     still has the call's marker (MarkerVariable) in its environment, is
//     killed. A process that starts a new session and also clears the
//     marker is not seen.
//   - ContainProcessGroup, on systems other than Linux: the process group.
//
// Outcome.Escaped says when processes may have outlived the call: found
// outside the containment (EscapedPIDs, killed where the kernel allowed),
// holding the command's output though the containment was emptied, or,
// under the scan, a process that left the command's session, since what
// it started may have gone unseen. The run tool's description promises the
// model exactly what the chosen containment guarantees. Processes that a
// command has other programs start for it (a daemon, cron, systemd-run)
// are not its descendants and are not contained.
//
// stdout and stderr are captured within a bound: the first and the last
// half of the limit of each are kept, and a marker says how many bytes were
// cut between them, so hundreds of megabytes of output cost a few
// kilobytes. The exit code, a killing signal or the timeout are in the
// result; any of them makes it an IsError result.
//
// The sandbox is a working directory and an environment, not an isolation
// boundary: commands run with the host's user and see its file system.
// Run this pack inside a container or a VM for untrusted models.
//
// As a pack, it is built from a tools: map by FromOptions (dir, env,
// timeout, max_timeout, max_output, shell, tool_prefix), and WithToolPrefix
// names the tool for a flat mount beside other packs ("sh_run").
package bash
