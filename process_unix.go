//go:build unix

package acphost

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the agent in a process group of its own, so Close can
// signal the agent and every process it started; where the system allows
// it, the agent is also killed when the host dies without Close. A confined
// agent gets a session of its own too (its group's id is still its pid):
// without a controlling terminal it cannot type into the user's shell
// (TIOCSTI), which would run its commands unconfined.
func setProcessGroup(cmd *exec.Cmd, confined bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !confined, Setsid: confined}
	setParentDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to the agent's whole process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
