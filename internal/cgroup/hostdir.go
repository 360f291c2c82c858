package cgroup

import (
	"strconv"
	"strings"
)

// IsHostDir reports whether name is the name of a host's directory of
// groups, "acphost-<pid>-<start time>" (see the package documentation):
// every process in it or beneath it is one a host started in a group (an
// agent, a terminal's command, or what they started), never the host.
func IsHostDir(name string) bool {
	rest, ok := strings.CutPrefix(name, "acphost-")
	if !ok {
		return false
	}
	pid, start, ok := strings.Cut(rest, "-")
	return ok && digits(pid) && digits(start)
}

func digits(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64) // no sign, no empty string
	return err == nil
}
