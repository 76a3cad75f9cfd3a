//go:build linux

package bash

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// host caches what the kernel allows, for the whole process: probing
// costs a process start or two, and the answer does not change.
var host struct {
	mu       sync.Mutex
	detected Containment
	probed   map[Containment]bool
	cgroup   string // the directory cgroup leaves are made in
}

// detect returns the strongest containment the host allows. A user
// namespace is not chosen for root: inside one, root loses its power over
// the host's files and ports, which its commands may rely on.
func detect(shell string) Containment {
	host.mu.Lock()
	defer host.mu.Unlock()
	if host.detected != "" {
		return host.detected
	}
	for _, c := range []Containment{ContainPIDNamespace, ContainUserNamespace, ContainCgroup} {
		if c == ContainUserNamespace && os.Geteuid() == 0 {
			continue
		}
		if probeLocked(c, shell) {
			host.detected = c
			return c
		}
	}
	host.detected = ContainScan
	return host.detected
}

// available reports whether containment c works on this host.
func available(c Containment, shell string) bool {
	host.mu.Lock()
	defer host.mu.Unlock()
	return probeLocked(c, shell)
}

func probeLocked(c Containment, shell string) bool {
	if ok, done := host.probed[c]; done {
		return ok
	}
	var ok bool
	switch c {
	case ContainPIDNamespace, ContainUserNamespace:
		cmd := exec.Command(shell, "-c", ":")
		cmd.SysProcAttr = namespaceAttr(c)
		if ok = cmd.Start() == nil; ok {
			_ = cmd.Wait()
		}
	case ContainCgroup:
		if base := cgroupBase(); base != "" && probeCgroup(base, shell) {
			host.cgroup, ok = base, true
		}
	case ContainScan:
		ok = true
	}
	if host.probed == nil {
		host.probed = map[Containment]bool{}
	}
	host.probed[c] = ok
	return ok
}

func namespaceAttr(c Containment) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_NEWPID}
	if c == ContainUserNamespace {
		// The caller's own ids map to themselves, so the command sees the
		// uid and gid it would see outside.
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	return a
}

// namespaceInit is the first process of a command's PID namespace. It
// runs the command in a shell of its own, so that the command's shell is
// an ordinary process (the first one ignores signals it has no handler
// for, even `kill $$`), and it reaps what the namespace orphans while it
// waits. Its exit, whatever the cause, makes the kernel kill the rest.
const namespaceInit = `"$0" -c "$1" & wait $!`

// initShell returns the POSIX shell that runs namespaceInit: sh when
// there is one, since the command's shell may not speak POSIX.
func initShell(shell string) string {
	if sh, err := exec.LookPath("/bin/sh"); err == nil {
		return sh
	}
	return shell
}

// cgroupBase returns the cgroup v2 directory of this process, where the
// leaves of calls are made, or "" when there is none.
func cgroupBase() string {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	var path string
	for line := range strings.SplitSeq(string(self), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if path == "" || err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(mounts), "\n") {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 5 || sep+1 >= len(f) || f[sep+1] != "cgroup2" {
			continue
		}
		root, mnt := f[3], f[4]
		rel := path
		if root != "/" {
			var ok bool
			if rel, ok = strings.CutPrefix(path, root); !ok {
				continue
			}
		}
		return filepath.Join(mnt, rel)
	}
	return ""
}

// probeCgroup checks that a leaf can be made under base, that a process
// can be started in it and that it can be killed whole (cgroup.kill).
func probeCgroup(base, shell string) bool {
	leaf, fd, err := newLeaf(base)
	if err != nil {
		return false
	}
	defer os.Remove(leaf)
	defer fd.Close()
	if _, err := os.Stat(filepath.Join(leaf, "cgroup.kill")); err != nil {
		return false
	}
	cmd := exec.Command(shell, "-c", ":")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(fd.Fd())}
	if cmd.Start() != nil {
		return false
	}
	_ = cmd.Wait()
	return true
}

var leafSeq atomic.Uint64

func newLeaf(base string) (string, *os.File, error) {
	leaf := filepath.Join(base, fmt.Sprintf("lode-bash-%d-%d", os.Getpid(), leafSeq.Add(1)))
	if err := os.Mkdir(leaf, 0o755); err != nil {
		return "", nil, err
	}
	fd, err := os.Open(leaf)
	if err != nil {
		_ = os.Remove(leaf)
		return "", nil, err
	}
	return leaf, fd, nil
}

// jail is one call's containment.
type jail struct {
	c      Containment
	marker string
	leaf   string   // the call's cgroup, under ContainCgroup
	leafFD *os.File // open until the shell has started in it
}

// command builds the command for one call under containment c, its
// environment carrying the call's marker.
func (b *Bash) command(command, marker string) (*exec.Cmd, *jail, error) {
	j := &jail{c: b.containment, marker: marker}
	var cmd *exec.Cmd
	switch j.c {
	case ContainPIDNamespace, ContainUserNamespace:
		cmd = exec.Command(initShell(b.shell), "-c", namespaceInit, b.shell, command)
		cmd.SysProcAttr = namespaceAttr(j.c)
	case ContainCgroup:
		host.mu.Lock()
		base := host.cgroup
		host.mu.Unlock()
		leaf, fd, err := newLeaf(base)
		if err != nil {
			return nil, nil, fmt.Errorf("bash: cgroup for the command: %w", err)
		}
		j.leaf, j.leafFD = leaf, fd
		cmd = exec.Command(b.shell, "-c", command)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, UseCgroupFD: true, CgroupFD: int(fd.Fd())}
	default:
		cmd = exec.Command(b.shell, "-c", command)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	cmd.Env = append(slices.Clip(b.env), MarkerVariable+"="+marker)
	return cmd, j, nil
}

// started is called once Start has returned, whether it succeeded or not.
func (j *jail) started(err error) {
	if j.leafFD != nil {
		j.leafFD.Close()
	}
	if err != nil && j.leaf != "" {
		_ = os.Remove(j.leaf)
	}
}

// kill ends the command at once, on a timeout or a stop.
func (j *jail) kill(cmd *exec.Cmd) {
	switch j.c {
	case ContainPIDNamespace, ContainUserNamespace:
		_ = cmd.Process.Kill()
	case ContainCgroup:
		_ = os.WriteFile(filepath.Join(j.leaf, "cgroup.kill"), []byte("1"), 0)
		_ = cmd.Process.Kill()
	default:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// cleanup runs once the shell has been waited for: it kills whatever the
// command left, waits until it is dead, and returns the processes that
// were found outside the containment (escaped) and whether any may have
// gone unseen or outlived the wait (unsure).
func (j *jail) cleanup(cmd *exec.Cmd) (escaped []int, unsure bool) {
	sid := cmd.Process.Pid // Setsid made the shell (or the namespace's init) a session leader
	switch j.c {
	case ContainUserNamespace, ContainPIDNamespace:
		// The namespace died with its first process, and nothing could
		// leave it: a process may join only its own PID namespace or one
		// below it, never the one above.
		return nil, false
	case ContainCgroup:
		_ = os.WriteFile(filepath.Join(j.leaf, "cgroup.kill"), []byte("1"), 0)
		empty := waitEmpty(j.leaf, time.Now().Add(cleanupBound))
		if empty {
			_ = os.Remove(j.leaf)
		}
		s := sweep(j.marker, sid)
		return s.all(), s.unsure || !empty
	default:
		_ = syscall.Kill(-sid, syscall.SIGKILL)
		s := sweep(j.marker, sid)
		// Processes of the session are the command's to kill; one that
		// left the session may have started others that dropped the marker.
		escaped = append(s.left, s.alive...)
		slices.Sort(escaped)
		return slices.Compact(escaped), s.unsure || len(s.left) > 0
	}
}

// waitExited waits until the shell has exited, without reaping it.
func waitExited(cmd *exec.Cmd) {
	const pPID = 1
	var info [128]byte // a siginfo_t, unread
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// waitEmpty waits until the cgroup at leaf has no process left, or the
// deadline passes. The kernel signals a change of cgroup.events as a
// modification of the file.
func waitEmpty(leaf string, deadline time.Time) bool {
	events := filepath.Join(leaf, "cgroup.events")
	// Most often it is empty already, and a watch costs more than a read:
	// closing one waits for the kernel's notification grace period.
	if data, err := os.ReadFile(events); err == nil && bytes.Contains(data, []byte("populated 0")) {
		return true
	}
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return false
	}
	watch := os.NewFile(uintptr(fd), "inotify")
	defer watch.Close()
	if _, err := syscall.InotifyAddWatch(fd, events, syscall.IN_MODIFY); err != nil {
		return false
	}
	_ = watch.SetReadDeadline(deadline)
	buf := make([]byte, 4096)
	for {
		data, err := os.ReadFile(events)
		if err != nil {
			return false
		}
		if bytes.Contains(data, []byte("populated 0")) {
			return true
		}
		if _, err := watch.Read(buf); err != nil {
			return false
		}
	}
}

// swept is what a sweep found: the pids it killed in the session (in),
// those it killed outside it (left), those it could not kill (alive), and
// whether it ran out of time before it was done (unsure).
type swept struct {
	in, left, alive []int
	unsure          bool
}

func (s swept) all() []int {
	all := slices.Concat(s.in, s.left, s.alive)
	slices.Sort(all)
	return slices.Compact(all)
}

// sweep kills every live process that is in session sid or carries the
// marker in its environment, round after round until a round finds none,
// and waits for each to die. A process is signalled through a pidfd opened
// before it is checked again, so a pid reused meanwhile is never killed.
func sweep(marker string, sid int) swept {
	var s swept
	entry := []byte(MarkerVariable + "=" + marker + "\x00")
	deadline := time.Now().Add(cleanupBound)
	self := os.Getpid()
	seen := map[int]bool{}
	for {
		if time.Now().After(deadline) {
			s.unsure = true
			break
		}
		var fds []int
		killed := false
		for _, pid := range listPIDs() {
			if pid == self {
				continue
			}
			if _, ok := matches(pid, sid, entry); !ok {
				continue
			}
			fd, err := pidfdOpen(pid)
			if errors.Is(err, syscall.ENOSYS) {
				// Kernels before 5.3: the pid is signalled directly, and
				// the next round sees whether it died.
				inSession, ok := matches(pid, sid, entry)
				if ok && syscall.Kill(pid, syscall.SIGKILL) == nil {
					s.note(seen, pid, inSession)
					killed = true
				}
				continue
			}
			if err != nil {
				continue // gone already
			}
			inSession, ok := matches(pid, sid, entry)
			if !ok {
				syscall.Close(fd)
				continue
			}
			if err := pidfdKill(fd); err != nil {
				syscall.Close(fd)
				if !errors.Is(err, syscall.ESRCH) && !slices.Contains(s.alive, pid) {
					s.alive = append(s.alive, pid)
				}
				continue
			}
			s.note(seen, pid, inSession)
			fds = append(fds, fd)
		}
		if len(fds) == 0 && !killed {
			break
		}
		if len(fds) > 0 && !waitExit(fds, deadline) {
			s.unsure = true
		}
		for _, fd := range fds {
			syscall.Close(fd)
		}
		if killed {
			runtime.Gosched()
		}
	}
	slices.Sort(s.in)
	slices.Sort(s.left)
	slices.Sort(s.alive)
	return s
}

func (s *swept) note(seen map[int]bool, pid int, inSession bool) {
	if seen[pid] {
		return
	}
	seen[pid] = true
	if inSession {
		s.in = append(s.in, pid)
	} else {
		s.left = append(s.left, pid)
	}
}

func listPIDs() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// matches reports whether pid is alive (not a zombie) and is in session
// sid or has the marker entry in its environment; inSession says which.
func matches(pid, sid int, entry []byte) (inSession, ok bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false, false
	}
	// The fields after the command name, which may hold anything, in
	// parentheses: state ppid pgrp session ...
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return false, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 4 || f[0] == "Z" || f[0] == "X" {
		return false, false
	}
	if session, _ := strconv.Atoi(f[3]); session == sid {
		return true, true
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false, false
	}
	return false, bytes.HasPrefix(env, entry) || bytes.Contains(env, append([]byte{0}, entry...))
}

// The pidfd system calls have the same numbers on every architecture.
const (
	sysPidfdSendSignal = 424
	sysPidfdOpen       = 434
)

func pidfdOpen(pid int) (int, error) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	syscall.CloseOnExec(int(fd))
	return int(fd), nil
}

func pidfdKill(fd int) error {
	if _, _, errno := syscall.Syscall6(sysPidfdSendSignal, uintptr(fd), uintptr(syscall.SIGKILL), 0, 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// waitExit waits until every process behind fds has exited (a pidfd turns
// readable then), or the deadline passes.
func waitExit(fds []int, deadline time.Time) bool {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	defer syscall.Close(ep)
	for _, fd := range fds {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return false
		}
	}
	events := make([]syscall.EpollEvent, len(fds))
	for left := len(fds); left > 0; {
		ms := int(time.Until(deadline).Milliseconds())
		if ms <= 0 {
			return false
		}
		n, err := syscall.EpollWait(ep, events, ms)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return false
		}
		for _, ev := range events[:n] {
			_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, int(ev.Fd), nil)
			left--
		}
	}
	return true
}
