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
	_, _, ok := parseHostDir(name)
	return ok
}

// parseHostDir reads the host's pid and start time from the name of its
// directory of groups (hostName); ok false for any other name.
func parseHostDir(name string) (pid int, start uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, "acphost-")
	if !ok {
		return 0, 0, false
	}
	p, s, ok := strings.Cut(rest, "-")
	pid64, err1 := strconv.ParseUint(p, 10, 31) // no sign, no empty string
	start, err2 := strconv.ParseUint(s, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return int(pid64), start, true
}
