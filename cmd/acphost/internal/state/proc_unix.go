//go:build unix

package state

import (
	"errors"
	"syscall"
)

// ProcessAlive reports whether process pid exists.
func ProcessAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
