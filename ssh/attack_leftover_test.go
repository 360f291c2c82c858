//go:build linux

package ssh_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/sshtest"
	"github.com/acphost/acphost/internal/testutil"
)

// withArgv lists the processes whose command line is exactly argv (the
// test's sshd is on this machine: its processes are ours to see).
func withArgv(argv ...string) []int {
	want := strings.Join(argv, "\x00") + "\x00"
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && string(b) == want && testutil.Running(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// uniqueSleep is a sleep no other process runs: "sleep 3000.NNNNNN".
func uniqueSleep() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1e9))
	return fmt.Sprintf("3000.%09d", n)
}

// unshareWorks reports whether this machine lets this user hold a process
// in a PID namespace of its own, as the remote side (this machine) must
// for the containment the transport picks.
func unshareWorks() bool {
	return exec.Command("unshare", "--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--mount-proc", "true").Run() == nil
}

func killAll(pids []int) {
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestAttackSSHDaemonWithoutTheMark (issue 31.4): a daemon the agent
// starts with an empty environment (as env -i, sudo or a service manager
// would) carries no mark; held in a PID namespace on the remote side, it
// ends with the agent all the same.
func TestAttackSSHDaemonWithoutTheMark(t *testing.T) {
	t.Parallel()
	if !unshareWorks() {
		t.Skip("SKIPPED, NOT PASSED: this machine has no unprivileged PID namespaces (unshare --user --pid); the transport falls back to the mark, which this daemon escapes (SPEC: Known limits)")
	}
	srv := sshtest.Start(t)
	tr, _ := remoteFake(t, srv, fakeagent.Script{})
	daemon := uniqueSleep()
	tr.Args = append([]string{"-c", `env -i sleep ` + daemon + ` </dev/null >/dev/null 2>&1 & exec "$0" "$@"`, tr.Command}, tr.Args...)
	tr.Command = "sh"
	t.Cleanup(func() { killAll(withArgv("sleep", daemon)) })
	l, err := tr.Dial(context.Background())
	require.NoError(t, err)
	testutil.Until(t, 15*time.Second, func() (bool, string) {
		return len(withArgv("sleep", daemon)) == 1, "the daemon did not start"
	})
	require.Equal(t, "pid namespace", tr.Containment())
	l.Stop(100 * time.Millisecond)
	testutil.Until(t, 20*time.Second, func() (bool, string) {
		left := withArgv("sleep", daemon)
		return len(left) == 0, fmt.Sprintf("the daemon without the mark outlived the agent: %v", left)
	})
}

// TestAttackSSHAgentKillsItsWatchdog (issue 31.4): an agent that finds
// its watchdog by the mark in the watchdog's command line, kills it, and
// then ignores SIGTERM and EOF. The watchdog's command line names no mark
// (and, in a PID namespace, the agent cannot even see it): the agent ends
// at Stop.
func TestAttackSSHAgentKillsItsWatchdog(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	tr, mark := remoteFake(t, srv, fakeagent.Script{})
	stay := uniqueSleep()
	tr.Command, tr.Args = "sh", []string{"-c", `for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = $$ ] && continue
		if tr '\000' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -e "$ACPHOST_LINK" -e "acphost-watch""dog"; then kill -9 "${p#/proc/}"; fi
	done
	trap '' TERM
	exec sleep ` + stay}
	t.Cleanup(func() {
		killAll(withArgv("sleep", stay))
		killAll(testutil.WithEnv(mark))
	})
	l, err := tr.Dial(context.Background())
	require.NoError(t, err)
	testutil.Until(t, 15*time.Second, func() (bool, string) {
		return len(withArgv("sleep", stay)) == 1, "the agent did not get to its sleep"
	})
	l.Stop(100 * time.Millisecond)
	testutil.Until(t, 20*time.Second, func() (bool, string) {
		left := withArgv("sleep", stay)
		return len(left) == 0, fmt.Sprintf("the agent that killed its watchdog outlived Stop: %v", left)
	})
}
