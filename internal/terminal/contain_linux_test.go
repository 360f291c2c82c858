//go:build linux

package terminal_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/internal/cgroup"
	"github.com/acphost/acphost/internal/terminal"
)

// daemon starts a terminal whose command double-forks a setsid daemon and
// then sleeps; it returns the terminal and the daemon's pid.
func daemon(t *testing.T, m *terminal.Manager) (id string, pid int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	id = create(t, m, "s", sh(`setsid sh -c 'sleep 1000 & echo $! > `+pidFile+`' </dev/null >/dev/null 2>&1; exec sleep 1000`))
	poll(t, "the daemon's pid", func() bool {
		b, err := os.ReadFile(pidFile)
		if err == nil {
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		return err == nil
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return id, pid
}

func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(stat[strings.LastIndexByte(string(stat), ')'):]), ") Z")
}

// In a cgroup, a daemon that left the command's session and group dies
// with the terminal; held by the process group only, it does not.
func TestKillReachesADaemon(t *testing.T) {
	probe, err := cgroup.New("probe-")
	if errors.Is(err, cgroup.ErrUnavailable) {
		t.Skipf("no cgroup here: %v", err)
	}
	require.NoError(t, err)
	require.NoError(t, probe.Remove(deadline))
	for name, mode := range map[string]terminal.CgroupMode{"cgroup": terminal.CgroupRequired, "process group": terminal.CgroupOff} {
		t.Run(name, func(t *testing.T) {
			m := newManager(t, terminal.Options{Cgroup: mode})
			id, pid := daemon(t, m)
			require.NoError(t, m.Kill(id))
			_, err := m.WaitForExit(t.Context(), id)
			require.NoError(t, err)
			if mode == terminal.CgroupOff {
				assert.True(t, running(pid), "without a cgroup the daemon escapes")
				return
			}
			assert.False(t, running(pid), "the daemon died with its terminal")
		})
	}
}

// A terminal that finds no cgroup falls back under CgroupAuto, reporting
// it once, and fails under CgroupRequired.
func TestCgroupFallbackIsReported(t *testing.T) {
	unavailable := fmt.Errorf("%w: forced", cgroup.ErrUnavailable)
	defer terminal.FailCgroups(unavailable)()
	var reasons []error
	m := newManager(t, terminal.Options{OnFallback: func(_ bool, err error) { reasons = append(reasons, err) }})
	create(t, m, "s", sh("true"))
	create(t, m, "s", sh("true"))
	require.Len(t, reasons, 1, "reported once")
	assert.ErrorIs(t, reasons[0], cgroup.ErrUnavailable)

	strict := newManager(t, terminal.Options{Cgroup: terminal.CgroupRequired})
	_, err := strict.Create("s", sh("true"))
	assert.ErrorIs(t, err, cgroup.ErrUnavailable)
	assert.ErrorIs(t, err, errors.ErrUnsupported)
}
