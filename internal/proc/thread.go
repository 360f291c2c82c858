package proc

import (
	"runtime"

	"github.com/acphost/acphost/internal/confine"
)

// Go runs f on a new goroutine locked to its OS thread until f returns.
// A process f starts has that thread as its parent, and on Linux its
// parent-death signal follows the thread, not the host process: f must
// not return before the process has been reaped. With confined, the
// thread comes from confine.Go and is never unlocked, so f may restrict
// it (confine.RestrictThread) and the runtime ends it with f.
func Go(confined bool, f func()) {
	if confined {
		confine.Go(f)
		return
	}
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		f()
	}()
}
