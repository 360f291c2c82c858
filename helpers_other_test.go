//go:build !unix

package acphost

import "os"

// groupAlive reports whether the group's leader still exists: there are no
// process groups here (see SPEC.md, known limits).
func groupAlive(pgid int) bool { return processRunning(pgid) }

// processRunning reports whether pid exists: FindProcess opens the process
// on Windows and fails when there is none.
func processRunning(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
