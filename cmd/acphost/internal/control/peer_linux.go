//go:build linux

package control

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/acphost/acphost/internal/cgroup"
)

// The person, not an agent. Every agent acphost starts runs as the user,
// so the uid cannot tell them apart; where the peer's process lives can.
// An agent's whole process tree is, by how acphost starts it, in one of:
// a cgroup beneath a host's "acphost-<pid>-<start>" directory (it cannot
// leave it unless it may write another group's cgroup.procs: root or the
// owner of a delegated subtree, and never under Landlock); a PID namespace
// of its own, with a user namespace of its own for a normal user (no
// process can leave either); or only a process group of its own, where a
// process that double-forks leaves the agent's ancestry. agentPeer
// refuses a peer found in any of these that the chat itself is not in.

// maxAncestry bounds the walk up a peer's ancestry; a deeper tree is
// refused (no person's shell is that deep; an agent could make one).
const maxAncestry = 1024

// personPeer refuses a control connection that is not the person's: a
// peer of another uid (samePeer), one whose process cannot be seen or
// inspected, or one an acphost agent runs (agentPeer).
func personPeer(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	if err := samePeer(c); err != nil {
		return err
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	pidfd := -1
	var cerr, perr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if cerr == nil {
			pidfd, perr = peerPidfd(int(fd), int(cred.Pid))
		}
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("control socket: SO_PEERCRED: %w", cerr)
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	switch {
	case cred.Pid <= 0:
		return fmt.Errorf("%w: its process is in a PID namespace this chat cannot see", ErrAgentPeer)
	case perr != nil:
		return fmt.Errorf("%w: its process ended before it could be checked", ErrAgentPeer)
	}
	if err := agentPeer(int(cred.Pid)); err != nil {
		return err
	}
	// What was read is the connecting process's only if it still lives:
	// else its pid may name another process by now.
	if pidfd >= 0 && errors.Is(unix.PidfdSendSignal(pidfd, 0, nil, 0), unix.ESRCH) {
		return fmt.Errorf("%w: its process ended before it could be checked", ErrAgentPeer)
	}
	return nil
}

// peerPidfd returns a pidfd of the process that connected to the socket
// fd: SO_PEERPIDFD (Linux 6.5) names that very process, and fails with
// ESRCH once it has ended; before, a pidfd of pid (Linux 5.3), which is
// that process unless it ended before the connection was accepted; or -1
// where there is neither. The error is ESRCH only: the peer is gone.
func peerPidfd(fd, pid int) (int, error) {
	p, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	switch {
	case err == nil:
		return p, nil
	case errors.Is(err, unix.ESRCH):
		return -1, err
	case pid <= 0:
		return -1, nil
	}
	if p, err = unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK); err != nil {
		return -1, nil // no pidfds (before 5.3), or gone: the checks find out
	}
	return p, nil
}

// agentPeer returns an error matching ErrAgentPeer, saying why, when the
// process pid (in this process's PID namespace) runs in an agent's
// containment that this process is not in itself: another PID or user
// namespace, an acphost host's cgroup, or a process tree acphost started.
func agentPeer(pid int) error {
	for _, ns := range []string{"pid", "user"} {
		own, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return fmt.Errorf("%w: this chat's %s namespace: %v", ErrAgentPeer, ns, err)
		}
		theirs, err := os.Readlink(procPath(pid, "ns", ns))
		if err != nil {
			return fmt.Errorf("%w: pid %d cannot be inspected: %v", ErrAgentPeer, pid, err)
		}
		if theirs != own {
			return fmt.Errorf("%w: pid %d is in another %s namespace (an agent's)", ErrAgentPeer, pid, ns)
		}
	}
	theirs, err := cgroupOf(procPath(pid, "cgroup"))
	if err != nil {
		return fmt.Errorf("%w: pid %d cannot be inspected: %v", ErrAgentPeer, pid, err)
	}
	own, _ := cgroupOf("/proc/self/cgroup")
	if g := foreignAgentGroup(theirs, own); g != "" {
		return fmt.Errorf("%w: pid %d is in the agent group %s", ErrAgentPeer, pid, g)
	}
	return agentAncestry(pid)
}

func procPath(pid int, elem ...string) string {
	return filepath.Join(append([]string{"/proc", strconv.Itoa(pid)}, elem...)...)
}

// cgroupOf returns the cgroup v2 path (the "0::" line) in the cgroup file
// of /proc, relative to the reader's cgroup namespace; "" on a host with
// cgroup v1 only.
func cgroupOf(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return p, nil
		}
	}
	return "", nil
}

// foreignAgentGroup returns the agent group that the cgroup path peer is
// in or beneath and own is not ("" if none): a host directory
// (cgroup.IsHostDir) and the group in it.
func foreignAgentGroup(peer, own string) string {
	parts := strings.Split(strings.Trim(peer, "/"), "/")
	for i, p := range parts {
		if !cgroup.IsHostDir(p) {
			continue
		}
		g := "/" + strings.Join(parts[:min(i+2, len(parts))], "/")
		if own != g && !strings.HasPrefix(own, g+"/") {
			return g
		}
	}
	return ""
}

// agentAncestry refuses pid when it or one of its ancestors, not this
// process nor one of its own ancestors, was started by an acphost
// process (isAcphost): an agent's tree, or a terminal's. The walk stops at
// init, at this process's own ancestry, at a process of another PID
// namespace, or at one it cannot read (gone, or hidden by hidepid: another
// user's, so none acphost started for this one).
func agentAncestry(pid int) error {
	mine := map[int]bool{}
	for p, i := os.Getpid(), 0; p > 1 && i < maxAncestry; i++ {
		mine[p] = true
		if p = parentOf(p); p < 0 {
			break
		}
	}
	for x, i := pid, 0; x > 1 && !mine[x]; i++ {
		if i == maxAncestry {
			return fmt.Errorf("%w: pid %d has more than %d ancestors", ErrAgentPeer, pid, maxAncestry)
		}
		p := parentOf(x)
		if p < 0 && x == pid {
			return fmt.Errorf("%w: pid %d cannot be inspected", ErrAgentPeer, pid)
		}
		if p <= 0 {
			return nil
		}
		if isAcphost(p) {
			return fmt.Errorf("%w: pid %d descends from pid %d, which acphost (pid %d) started", ErrAgentPeer, pid, x, p)
		}
		x = p
	}
	return nil
}

// parentOf returns the parent pid of pid (field 4 of /proc/pid/stat): 0
// for a parent outside this PID namespace, -1 when it cannot be read.
func parentOf(pid int) int {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(b, ')') // the name before it may hold anything
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return -1
	}
	p, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return p
}

// ownExe is this process's executable, read once (each ancestor of every
// peer is compared with it).
var ownExe = sync.OnceValues(func() (os.FileInfo, error) { return os.Stat("/proc/self/exe") })

// isAcphost reports whether process pid runs acphost: this very
// executable, or one named acphost (another version, or one replaced
// since it started).
func isAcphost(pid int) bool {
	exe := procPath(pid, "exe")
	if theirs, err := os.Stat(exe); err == nil {
		if own, err := ownExe(); err == nil && os.SameFile(own, theirs) {
			return true
		}
	}
	target, err := os.Readlink(exe)
	return err == nil && filepath.Base(strings.TrimSuffix(target, " (deleted)")) == "acphost"
}
