//go:build !linux

package proc

import (
	"os/exec"

	"github.com/acphost/acphost/internal/confine"
)

// StartRestricted fails: only Linux confines (Landlock).
func StartRestricted(*exec.Cmd, []string) error { return confine.ErrUnsupported }
