//go:build linux

package proc

import (
	"os"
	"syscall"
)

// watchExit asks the kernel for a's pidfd, so that awaitExit can wait for
// the exit in the runtime's poller; *fd stays -1 where it has none.
func watchExit(a *syscall.SysProcAttr, fd *int) {
	*fd = -1
	a.PidFD = fd
}

// awaitExit returns once the process of pidfd fd has exited (it is then a
// zombie, which Wait reaps at once), closing fd. It waits in the poller, so
// an idle agent costs no OS thread blocked in wait4; where fd cannot be
// polled it returns at once and Wait blocks as before.
func awaitExit(fd int) {
	if fd < 0 {
		return
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	waited := false
	_ = rc.Read(func(uintptr) bool { // readable once the process has exited
		done := waited
		waited = true
		return done
	})
}

// watchExitAsync has f run once the process of pidfd fd has exited,
// without a goroutine of its own meanwhile (see exitWatcher), closing fd
// first. false: it cannot be, and f never runs (fd is left open).
func watchExitAsync(fd int, f func()) bool {
	return fd >= 0 && exits.watch(fd, func() {
		syscall.Close(fd)
		f()
	})
}
