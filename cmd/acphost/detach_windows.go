//go:build windows

package main

import "syscall"

// detachAttr starts a process without a console, in a process group of
// its own, so the console's Ctrl-C does not reach it.
func detachAttr() (*syscall.SysProcAttr, error) {
	const createNewProcessGroup, detachedProcess = 0x00000200, 0x00000008
	return &syscall.SysProcAttr{CreationFlags: createNewProcessGroup | detachedProcess}, nil
}
