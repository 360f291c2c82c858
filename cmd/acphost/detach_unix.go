//go:build unix

package main

import "syscall"

// detachAttr starts a process in a session of its own: no terminal, and
// the shell's Ctrl-C and hangup do not reach it.
func detachAttr() (*syscall.SysProcAttr, error) {
	return &syscall.SysProcAttr{Setsid: true}, nil
}
