//go:build linux || freebsd

package acphost

import "syscall"

// setParentDeathSignal has the kernel SIGKILL the agent when its parent
// dies. On Linux the signal follows the thread that started the agent,
// which startAndWait keeps alive as long as the agent runs.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
