//go:build unix && !linux

package acphost

import "syscall"

// setParentDeathSignal does nothing: only Linux has a parent-death signal
// (see SPEC.md, known limits).
func setParentDeathSignal(*syscall.SysProcAttr) {}
