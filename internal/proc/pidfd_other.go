//go:build !linux

package proc

import "syscall"

func watchExit(_ *syscall.SysProcAttr, fd *int) { *fd = -1 }

// watchExitAsync reports false: the exit is waited for in Wait.
func watchExitAsync(int, func()) bool { return false }
