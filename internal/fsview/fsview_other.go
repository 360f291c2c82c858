//go:build !linux

package fsview

import "os/exec"

// Start fails here: only Linux has the namespaces a view is made of.
func Start(*exec.Cmd, View, []string) error { return ErrUnavailable }
