//go:build unix

package acphost

import (
	"syscall"

	"github.com/acphost/acphost/internal/testutil"
)

// groupAlive reports whether any process of the group still exists.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

// processRunning reports whether pid exists and is not a zombie.
var processRunning = testutil.Running
