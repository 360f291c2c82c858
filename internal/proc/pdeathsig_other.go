//go:build unix && !linux && !freebsd

package proc

import "syscall"

// setParentDeathSignal does nothing: only Linux and FreeBSD have a
// parent-death signal (see SPEC.md, known limits).
func setParentDeathSignal(*syscall.SysProcAttr) {}

func clearParentDeathSignal(*syscall.SysProcAttr) {}
