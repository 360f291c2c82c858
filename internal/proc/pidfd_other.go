//go:build !linux

package proc

import "syscall"

func watchExit(_ *syscall.SysProcAttr, fd *int) { *fd = -1 }

func awaitExit(int) {}
