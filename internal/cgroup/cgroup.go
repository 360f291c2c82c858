// Package cgroup holds process trees in Linux cgroup v2 groups, so that a
// tree can be killed whole however its processes detached (a new session,
// a new process group, a double fork reparenting them to init).
//
// Every group lives in one directory per host process,
// "acphost-<pid>-<start time>", created beneath the host's own cgroup (the
// "0::" line of /proc/self/cgroup, on the cgroup2 mount found in
// /proc/self/mountinfo) when the host may write there: root, or a user
// with a delegated subtree (systemd Delegate=yes, a user session's
// app.slice). A process enters its group atomically as it is cloned
// (CLONE_INTO_CGROUP, Linux 5.7), so nothing it does can run outside the
// group first. [Group.Kill] writes cgroup.kill (Linux 5.14); where that is
// missing it freezes the group (cgroup.freeze) and SIGKILLs every process
// listed in it and its descendants, then thaws it, until none is left.
//
// A host that dies without removing its groups (SIGKILL, a crash) has them
// killed by its watcher: a shell started with the host's directory, waiting
// to read a pipe only the host writes, which the kernel closes when the
// host ends; the shell then writes the directory's cgroup.kill. The
// directories themselves are left, and the first [New] of a process sweeps
// those of dead hosts found beside its own (their pid is gone or now names
// a process started at another time): whatever they still hold is killed
// and the directories removed. See [SweepStale].
//
// Where none of this is possible [New] returns an error matching
// [ErrUnavailable] (and errors.ErrUnsupported) saying why; callers fall
// back to process groups.
package cgroup

import (
	"errors"
	"fmt"
)

// ErrUnavailable is matched by the errors of [New] where the system offers
// no cgroup v2 group this process may create and move processes into.
var ErrUnavailable = fmt.Errorf("cgroup: no usable cgroup v2 group: %w", errors.ErrUnsupported)

// unavailable returns an error matching ErrUnavailable with a reason.
func unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnavailable, fmt.Sprintf(format, args...))
}
