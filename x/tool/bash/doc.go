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
// Each command is the leader of a process group of its own. When it ends —
// it exits, its timeout passes (per call, bounded by a maximum) or the
// caller's context is done — the whole group is killed with SIGKILL, so
// nothing it left in the background (`sleep 1000 &`) outlives the call.
// Output is read from pipes the command writes into directly; a process
// that left the group and still holds them is given a short grace and then
// not waited for, and the outcome says so.
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
