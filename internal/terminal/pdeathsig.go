//go:build linux || freebsd

package terminal

import "syscall"

// setParentDeathSignal has the kernel SIGKILL the command when its parent
// dies. On Linux the parent is the thread that started it, which
// Manager.supervise keeps until the command is reaped.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
