package proc

import (
	"os"
	"syscall"
)

// Exit is how a reaped process ended.
type Exit struct {
	// Code is the exit code; -1 when a signal ended the process or there
	// is no state (never reaped).
	Code int
	// Signaled reports that Signal ended the process (Unix).
	Signaled bool
	Signal   syscall.Signal
}

// ExitOf reads the exit from the state of a reaped process (nil: none).
func ExitOf(ps *os.ProcessState) Exit {
	if ps == nil {
		return Exit{Code: -1}
	}
	e := Exit{Code: ps.ExitCode()}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signaled, e.Signal = true, ws.Signal()
	}
	return e
}
