//go:build !unix && !windows

package state

import (
	"os"
)

// lockFile does nothing where the OS has no file lock Go reaches (Plan 9,
// js, wasip1): two acphost processes may then lose a record.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) {}
