//go:build !unix

package acphost

import (
	"os/exec"
	"syscall"
)

// setProcessGroup is a no-op where process groups do not exist; Close then
// reaches only the agent itself (see SPEC.md, known limits).
func setProcessGroup(*exec.Cmd, bool) {}

// signalGroup kills the agent process; other signals are not portable.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil && sig == syscall.SIGKILL {
		_ = cmd.Process.Kill()
	}
}
