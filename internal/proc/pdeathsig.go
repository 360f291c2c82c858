//go:build linux || freebsd

package proc

import "syscall"

// setParentDeathSignal has the kernel SIGKILL the process when its parent
// dies. On Linux the parent is the thread that started it, which must
// therefore live as long as the process does (see Go).
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// clearParentDeathSignal takes the signal off a (see Process.parentDeath).
func clearParentDeathSignal(a *syscall.SysProcAttr) {
	if a != nil {
		a.Pdeathsig = 0
	}
}
