//go:build !unix

package main

import "os"

// processAlive reports whether process pid exists.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid) // on Windows, opens the process
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
