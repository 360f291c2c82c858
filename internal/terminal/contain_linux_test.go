//go:build linux

package terminal_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/internal/cgroup"
	"github.com/acphost/acphost/internal/proc"
	"github.com/acphost/acphost/internal/terminal"
	"github.com/acphost/acphost/internal/testutil"
)

// daemon starts a terminal whose command double-forks a setsid daemon and
// then sleeps; it returns the terminal and the daemon's pid.
func daemon(t *testing.T, m *terminal.Manager) (id string, pid int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	id = create(t, m, "s", sh(`setsid sh -c 'sleep 1000 & echo `+testutil.NamedPID+` > `+pidFile+`' </dev/null >/dev/null 2>&1; exec sleep 1000`))
	poll(t, "the daemon's pid", func() bool {
		b, err := os.ReadFile(pidFile)
		if err == nil {
			pid, err = testutil.HostPID(string(b))
		}
		return err == nil && pid > 0
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

// In a PID namespace of its own, a daemon that left the command's session
// and group dies with the terminal, confined or not; the command is PID 1
// there.
func TestKillReachesADaemonInANamespace(t *testing.T) {
	if err := proc.NamespaceAvailable(); err != nil {
		t.Skipf("LOUD: no PID namespace here: %v", err)
	}
	for _, confined := range []bool{false, true} {
		t.Run(fmt.Sprintf("confined=%v", confined), func(t *testing.T) {
			// KillGrace short: as PID 1 the command ignores SIGTERM (it has
			// no handler), so SIGKILL ends it.
			o := terminal.Options{Cgroup: terminal.CgroupOff, Namespace: terminal.NamespaceRequired, KillGrace: 100 * time.Millisecond}
			if confined {
				o.Confine, o.Writable = true, []string{os.TempDir()} // daemon's pid file
			}
			m := newManager(t, o)
			id, pid := daemon(t, m)
			require.NoError(t, m.Kill(id))
			_, err := m.WaitForExit(t.Context(), id)
			require.NoError(t, err)
			assert.False(t, running(pid), "the daemon died with its terminal")
		})
	}
}

// A terminal that finds no cgroup under CgroupAuto runs in a namespace
// under NamespaceAuto, reporting the step down once, namespaced.
func TestCgroupFallbackToANamespaceIsReported(t *testing.T) {
	if err := proc.NamespaceAvailable(); err != nil {
		t.Skipf("LOUD: no PID namespace here: %v", err)
	}
	defer terminal.FailCgroups(fmt.Errorf("%w: forced", cgroup.ErrUnavailable))()
	var got []bool
	m := newManager(t, terminal.Options{Namespace: terminal.NamespaceAuto, KillGrace: 100 * time.Millisecond, OnFallback: func(ns bool, err error) {
		assert.ErrorIs(t, err, cgroup.ErrUnavailable)
		got = append(got, ns)
	}})
	_, pid := daemon(t, m)
	assert.Equal(t, []bool{true}, got, "reported once, namespaced")
	require.NoError(t, m.Close())
	assert.False(t, running(pid), "the daemon died with the terminals")
}
