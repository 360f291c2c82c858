//go:build linux

package proc

import "syscall"

// watchExit asks the kernel for a's pidfd, so that the exit watcher can
// wait for the exit in the runtime's poller; *fd stays -1 where it has none.
func watchExit(a *syscall.SysProcAttr, fd *int) {
	*fd = -1
	a.PidFD = fd
}

// watchExitAsync has f run once the process of pidfd fd has exited,
// without a goroutine of its own meanwhile (see exitWatcher), closing fd
// first. false: it cannot be (fd is closed), and f never runs.
func watchExitAsync(fd int, f func()) bool {
	if fd < 0 {
		return false
	}
	if exits.watch(fd, func() {
		syscall.Close(fd)
		f()
	}) {
		return true
	}
	syscall.Close(fd)
	return false
}
