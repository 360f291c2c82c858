//go:build !unix

package main

import (
	"errors"
	"os"
)

// processAlive reports whether process pid exists.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid) // on Windows, opens the process
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}

// interruptProcess cannot send Ctrl-C to another console's process here.
func interruptProcess(pid int) error {
	return errors.New("acphost cancel needs Unix signals; press Ctrl-C in that acphost")
}
