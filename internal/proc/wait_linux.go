//go:build linux

package proc

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

const pPID = 1 // P_PID for waitid

// WaitExited blocks until p has exited without reaping it (waitid with
// WNOWAIT), so its pid stays reserved until p.Wait is called.
func WaitExited(p *os.Process) error {
	var info [16]uint64 // a siginfo_t is 128 bytes; its contents are not needed
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(p.Pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		runtime.KeepAlive(p)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}
