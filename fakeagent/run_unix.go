//go:build unix

package fakeagent

import (
	"os/exec"
	"syscall"
)

// ownGroup has cmd start a process group of its own, for killGroup.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills cmd and everything it started in its group.
func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
