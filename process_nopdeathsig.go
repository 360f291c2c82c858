//go:build unix && !linux && !freebsd

package acphost

import "syscall"

// setParentDeathSignal does nothing: only Linux and FreeBSD have a
// parent-death signal (see SPEC.md, known limits).
func setParentDeathSignal(*syscall.SysProcAttr) {}
