//go:build !unix

package terminal

import (
	"os/exec"
	"strconv"
	"syscall"
)

// signalName names sig; no process ends by a signal here.
func signalName(sig syscall.Signal) string { return "SIG" + strconv.Itoa(int(sig)) }

// lookPath finds file in the host's PATH.
func lookPath(file string, env []string) (string, error) {
	return exec.LookPath(file)
}
