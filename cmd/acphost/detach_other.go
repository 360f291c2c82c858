//go:build !unix && !windows

package main

import (
	"errors"
	"syscall"
)

func detachAttr() (*syscall.SysProcAttr, error) {
	return nil, errors.New("this system cannot start acphost in the background")
}
