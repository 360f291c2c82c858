//go:build unix && !linux && !freebsd

package terminal

import "syscall"

// setParentDeathSignal does nothing: there is no parent-death signal here.
func setParentDeathSignal(*syscall.SysProcAttr) {}
