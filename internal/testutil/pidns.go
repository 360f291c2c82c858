package testutil

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// NamedPID is a shell word naming $! in a way HostPID can read wherever
// the shell runs: its pid as the shell sees it and the PID namespace it
// sees it in (a process in a PID namespace of its own knows only its pid
// there).
const NamedPID = `"$! $(readlink /proc/self/ns/pid)"`

// HostPID reads what NamedPID wrote: the pid of that process in this
// process's PID namespace, found by its namespace and its last NSpid.
func HostPID(named string) (int, error) {
	f := strings.Fields(named)
	if len(f) == 0 {
		return 0, fmt.Errorf("testutil: no pid in %q", named)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || len(f) == 1 {
		return pid, err
	}
	if own, _ := os.Readlink("/proc/self/ns/pid"); own == f[1] {
		return pid, nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", p)); ns != f[1] {
			continue
		}
		if nsPIDs(p) == pid {
			return p, nil
		}
	}
	return 0, fmt.Errorf("testutil: no process is pid %d in %s", pid, f[1])
}

// nsPIDs is the last pid of the NSpid line of /proc/pid/status: the
// process's pid in its own namespace.
func nsPIDs(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[len(f)-1])
				return n
			}
		}
	}
	return 0
}
