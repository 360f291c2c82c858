//go:build !unix

package state

import "os"

// ProcessAlive reports whether process pid exists.
func ProcessAlive(pid int) bool {
	p, err := os.FindProcess(pid) // on Windows, opens the process
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
