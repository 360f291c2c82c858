//go:build unix

package container_test

import (
	"strconv"
	"syscall"
)

func itoa(n int) string { return strconv.Itoa(n) }

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
