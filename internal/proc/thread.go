package proc

import "runtime"

// Go runs f on a new goroutine locked to its OS thread until f returns.
// A process f starts has that thread as its parent, and on Linux its
// parent-death signal follows the thread, not the host process: f must
// not return before the process has been reaped. (A confined process is
// started by StartRestricted, from a thread of its own.)
func Go(f func()) {
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		f()
	}()
}
