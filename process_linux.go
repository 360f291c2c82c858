package acphost

import "syscall"

// setParentDeathSignal has the kernel SIGKILL the agent when the thread
// that started it ends, which startAndWait keeps from happening before the
// agent's exit unless the host process itself dies.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
