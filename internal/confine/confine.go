// Package confine starts processes whose writes to the file system the
// kernel confines to a set of directories: Landlock on Linux 5.13 and
// later. The confinement is inherited by every process the command starts
// and cannot be lifted by it; reading stays allowed everywhere.
package confine

import (
	"errors"
	"os/exec"
	"runtime"
)

// ErrUnsupported is returned where the kernel offers no confinement.
var ErrUnsupported = errors.New("confine: Landlock is not available on this system")

// Start starts cmd so that it, and every process it starts, can create,
// write, remove, rename or link files only beneath the writable
// directories, and write to /dev/null, /dev/zero, /dev/full and
// pseudo-terminals; ioctl on other device files is refused (Landlock ABI 5
// and later). Symlinks,
// subprocesses and changing directory do not widen that: the kernel checks
// the directories a file is reached through (so a hard link inside a
// writable directory to a file outside is writable). Truncation is covered
// from ABI 3 (Linux 6.2) on; file modes, owners, times and extended
// attributes never are. From ABI 6 (Linux 6.12) the process tree also
// cannot signal processes outside it nor connect to abstract unix sockets
// made outside it (see Scoped). Set-user-id programs lose their powers. The caller
// should also give cmd a session of its own (Setsid), or it can type into
// the controlling terminal (TIOCSTI) on kernels before ABI 5.
func Start(cmd *exec.Cmd, writable []string) error {
	done := make(chan error, 1)
	Go(func() {
		if err := RestrictThread(writable); err != nil {
			done <- err
			return
		}
		done <- cmd.Start()
	})
	return <-done
}

// Go runs f on a new goroutine locked to an OS thread of its own that is
// not the process's main thread, and never unlocked: f may restrict it
// (RestrictThread), and the runtime ends the thread with the goroutine. The
// main thread is avoided because the runtime cannot end it: a locked
// goroutine ending there wedges it for good, restricted.
func Go(f func()) {
	go func() {
		runtime.LockOSThread()
		if !onMainThread() {
			f() // never unlocked
			return
		}
		// Hand over to a goroutine that cannot run on the main thread
		// while this one holds it, and free the main thread unrestricted.
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			f() // never unlocked
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}

// RestrictThread confines the calling OS thread, and every process it
// starts from then on, as Start describes: a child inherits the
// restriction of the thread that forked it. The caller must run on a
// thread from Go, so that no other goroutine ever runs restricted.
func RestrictThread(writable []string) error {
	v := abi()
	if v == 0 {
		return ErrUnsupported
	}
	return restrictThread(v, writable)
}

// Available reports whether Start can confine commands here.
func Available() bool { return abi() > 0 }

// Scoped reports whether confined processes are also kept from signalling
// processes outside their confinement and from connecting to abstract unix
// sockets created outside it (Landlock ABI 6, Linux 6.12 and later).
func Scoped() bool { return abi() >= 6 }
