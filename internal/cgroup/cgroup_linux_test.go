//go:build linux

package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newGroup returns a group, or skips loudly where this machine has none.
func newGroup(t *testing.T) *Group {
	t.Helper()
	g, err := New("test-")
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no cgroup v2 group here: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Remove(5 * time.Second) })
	return g
}

// startDaemon starts, in g, a shell that double-forks a setsid daemon and
// returns the daemon's pid.
func startDaemon(t *testing.T, g *Group) (cmd *exec.Cmd, daemon int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd = exec.Command("sh", "-c", `setsid sh -c 'sleep 1000 & echo $! > `+pidFile+`' </dev/null >/dev/null 2>&1; exec sleep 1000`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g.Attach(cmd.SysProcAttr)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(pidFile)
		if err == nil {
			if daemon, err = strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return cmd, daemon
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not start")
		}
		time.Sleep(time.Millisecond) // polling for the file, with a deadline
	}
}

func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	return !strings.Contains(string(stat[strings.LastIndexByte(string(stat), ')'):]), ") Z")
}

func cgroupOf(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return p
		}
	}
	return ""
}

// A daemon that left its session and group is still in the group, and
// Remove kills it and removes the directory; with cgroup.kill and with its
// emulation (freeze, SIGKILL each pid) for kernels before 5.14.
func TestRemoveKillsTheWholeTree(t *testing.T) {
	for _, emulate := range []bool{false, true} {
		t.Run(fmt.Sprintf("emulated=%v", emulate), func(t *testing.T) {
			noKill.Store(emulate)
			defer noKill.Store(false)
			g := newGroup(t)
			cmd, daemon := startDaemon(t, g)
			assert.True(t, strings.HasSuffix(g.Path(), cgroupOf(t, daemon)), "the daemon is in %s, not %s", cgroupOf(t, daemon), g.Path())
			assert.True(t, g.Populated())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }() // reap our child so the group can empty
			require.NoError(t, g.Remove(5*time.Second))
			<-done
			assert.False(t, alive(daemon), "the daemon was killed")
			_, err := os.Stat(g.Path())
			assert.ErrorIs(t, err, os.ErrNotExist, "the group was removed")
		})
	}
}

// The last group removed takes the host's directory with it.
func TestHostDirectoryGoesWithTheLastGroup(t *testing.T) {
	g := newGroup(t)
	hostDir := filepath.Dir(g.Path())
	require.DirExists(t, hostDir)
	require.NoError(t, g.Remove(time.Second))
	host.mu.Lock()
	refs := host.refs
	host.mu.Unlock()
	if refs == 0 {
		assert.NoDirExists(t, hostDir)
	}
}

// The directory of a host that died without removing its groups is swept,
// its processes killed; a live host's is left alone.
func TestSweepStaleRemovesDeadHostsGroups(t *testing.T) {
	g := newGroup(t) // makes sure this host is probed and has its directory
	parent := filepath.Dir(filepath.Dir(g.Path()))
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	staleDir := filepath.Join(parent, fmt.Sprintf("acphost-%d-%d", dead.Process.Pid, 12345), "agent-1")
	require.NoError(t, os.MkdirAll(staleDir, 0o755))
	fd, err := syscall.Open(staleDir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	require.NoError(t, err)
	orphan := exec.Command("sleep", "1000")
	orphan.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	require.NoError(t, orphan.Start())
	syscall.Close(fd)
	reaped := make(chan struct{})
	go func() { _ = orphan.Wait(); close(reaped) }()

	swept, err := SweepStale()
	require.NoError(t, err)
	assert.Contains(t, swept, filepath.Dir(staleDir))
	<-reaped
	assert.NoDirExists(t, filepath.Dir(staleDir))
	assert.DirExists(t, g.Path(), "this host's own groups stay")
}

// The host's own directory is one IsHostDir knows.
func TestHostNameIsAHostDir(t *testing.T) {
	if name := hostName(os.Getpid()); !IsHostDir(name) {
		t.Errorf("IsHostDir(%q) is false", name)
	}
}
