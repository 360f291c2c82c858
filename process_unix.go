//go:build unix

package acphost

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the agent in a process group of its own, so Close can
// signal the agent and every process it started; where the system allows
// it, the agent is also killed when the host dies without Close.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to the agent's whole process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
