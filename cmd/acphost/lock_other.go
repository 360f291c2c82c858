//go:build !unix && !windows

package main

import "os"

// lockFile does nothing where the OS has no file lock Go reaches (Plan 9,
// js, wasip1): two acphost processes may then lose a record.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) {}

// oNoFollow: no such open flag here; the directory check stands alone.
const oNoFollow = 0

// checkPrivateDir: file modes do not say who may write here (Windows ACLs,
// or no such notion); the user's profile directory is trusted.
func checkPrivateDir(string) error { return nil }
