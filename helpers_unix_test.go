//go:build unix

package acphost

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// groupAlive reports whether any process of the group still exists.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

// processRunning reports whether pid exists and is not a zombie.
func processRunning(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat))
	return len(fields) > 2 && fields[2] != "Z"
}
