//go:build !unix

package terminal

import (
	"os"
	"os/exec"
)

// setProcAttr does nothing: process groups are a Unix feature.
func setProcAttr(*exec.Cmd, bool) {}

// signalGroup kills p itself; children it started are not reached.
func signalGroup(p *os.Process, hard bool) error {
	return p.Kill()
}

// exitStatus converts the state of a reaped process.
func exitStatus(ps *os.ProcessState) ExitStatus {
	code := -1
	if ps != nil {
		code = ps.ExitCode()
	}
	return ExitStatus{Code: &code}
}

// lookPath finds file in the host's PATH.
func lookPath(file string, env []string) (string, error) {
	return exec.LookPath(file)
}
