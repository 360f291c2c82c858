//go:build !linux

package terminal

import (
	"errors"
	"os"
)

// waitExited is not available here; the caller reaps the process with
// p.Wait instead, after which its group is no longer signalled.
func waitExited(p *os.Process) error {
	return errors.ErrUnsupported
}
