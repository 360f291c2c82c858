//go:build !unix

package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// SetGroup does nothing where process groups do not exist: a signal then
// reaches only the command itself (see SPEC.md, known limits).
func SetGroup(*exec.Cmd, bool) {}

// SignalGroup kills p itself for SIGKILL; children it started are not
// reached. Other signals are not portable: errors.ErrUnsupported.
func SignalGroup(p *os.Process, sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		return p.Kill()
	}
	return errors.ErrUnsupported
}

// Groups reports whether SignalGroup reaches a whole process group here.
const Groups = false

func clearParentDeathSignal(*syscall.SysProcAttr) {}
