//go:build unix

package testutil

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Descendants lists the processes below pid (not pid itself).
func Descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := ppid(p); pp > 0 {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// stat is /proc/pid/stat's fields after the command's name.
func stat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

func ppid(pid int) int {
	f := stat(pid)
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// Comm is pid's command name ("" if there is none).
func Comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// Running reports whether pid exists and is not a zombie.
func Running(pid int) bool {
	f := stat(pid)
	return len(f) > 0 && f[0] != "Z"
}

// WithEnv lists the running processes (not zombies) whose environment
// has entry ("KEY=value"): how a test finds what it started, wherever it
// was reparented.
func WithEnv(entry string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if !Running(p) {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == entry {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// NoneLeft polls until no running process carries entry in its
// environment, failing t if some still do after within.
func NoneLeft(t testing.TB, entry string, within time.Duration) {
	t.Helper()
	Until(t, within, func() (bool, string) {
		left := WithEnv(entry)
		return len(left) == 0, fmt.Sprintf("processes carrying %s still run: %v", entry, left)
	})
}
