//go:build unix

package exitcode

import (
	"syscall"
	"testing"
)

// A signal's status is the shell's: 128 plus the signal's number.
func TestSignalStatuses(t *testing.T) {
	if Interrupt != 128+int(syscall.SIGINT) || Term != 128+int(syscall.SIGTERM) {
		t.Errorf("Interrupt %d, Term %d", Interrupt, Term)
	}
	if OK == Failed || Failed == Usage || OK != 0 {
		t.Errorf("OK %d, Failed %d, Usage %d", OK, Failed, Usage)
	}
}
