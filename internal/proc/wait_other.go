//go:build !linux

package proc

import (
	"errors"
	"os"
)

// WaitExited is not available here; the caller reaps the process with
// p.Wait instead, after which its group is no longer signalled.
func WaitExited(p *os.Process) error {
	return errors.ErrUnsupported
}
