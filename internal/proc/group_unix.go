//go:build unix

package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// SetGroup puts cmd in a process group of its own, whose id is its pid, so
// that a signal reaches it and every process it starts; a confined command
// (confined) in a session of its own too: without a controlling terminal
// it cannot type into the user's shell (TIOCSTI), which would run its
// commands unconfined. Where the system has one, an unconfined cmd also
// gets a parent-death signal: start it from a thread of Go (a confined one
// cannot: see StartRestricted). SetGroup replaces cmd.SysProcAttr.
func SetGroup(cmd *exec.Cmd, confined bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !confined, Setsid: confined}
	if !confined {
		setParentDeathSignal(cmd.SysProcAttr)
	}
}

// SignalGroup sends sig to the process group led by p; a group that no
// longer exists is not an error. The caller must know that p has not been
// reaped (its pid, and so the group's id, could be reused).
func SignalGroup(p *os.Process, sig syscall.Signal) error {
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Groups reports whether SignalGroup reaches a whole process group here.
const Groups = true
