//go:build linux

package acphost_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/cgroup"
	"github.com/acphost/acphost/internal/confine"
	"github.com/stretchr/testify/require"
)

// cgroup2Root is where the cgroup v2 hierarchy is mounted.
func cgroup2Root(t *testing.T) string {
	f, err := os.Open("/proc/self/mountinfo")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, fl := range fields {
			if fl == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" {
				return fields[4]
			}
		}
	}
	t.Skip("no cgroup2 mount")
	return ""
}

// An agent's tool moves itself out of its cgroup (to the hierarchy's root)
// and starts a setsid daemon there. A confined agent cannot (Landlock
// refuses the write to cgroup.procs), so Close still kills the daemon; an
// unconfined one that may write there is kept in only by a cgroup namespace
// where the mount has nsdelegate (SPEC.md, known limits).
func TestAgentCannotLeaveItsCgroup(t *testing.T) {
	for _, confined := range []bool{true, false} {
		t.Run(fmt.Sprintf("confined=%v", confined), func(t *testing.T) {
			if confined && !confine.Available() {
				t.Skip("LOUD: Landlock is not available on this kernel")
			}
			if !confined && !mountHasNsdelegate(t) {
				t.Skip("LOUD: the cgroup2 mount has no nsdelegate: an unconfined agent that may write cgroup.procs can leave its group here (a known limit)")
			}
			if g, err := cgroup.New("probe-"); err != nil {
				t.Skipf("LOUD: no cgroup this user may make (that needs root or a delegated cgroup; a normal user's agent runs in a PID namespace, which no process leaves: TestCloseLeavesNoDaemonOfTheAgent): %v", err)
			} else {
				require.NoError(t, g.Remove(time.Second))
			}
			root := cgroup2Root(t)
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "daemon.pid")
			escape := "echo $$ > " + filepath.Join(root, "cgroup.procs") + " 2>/dev/null; " + acphost.DaemonScript(pidFile, false)
			opts := acphost.ACPOptions{Dir: dir, Process: acphost.ProcessOptions{Contain: acphost.ContainCgroup}, Timeouts: acphost.Timeouts{CloseGrace: 200 * time.Millisecond}}
			if confined {
				opts.Process.Confine = &acphost.Confinement{Writable: []string{dir}}
			}
			c, err := acphost.StartFake(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
				{Run: []string{"sh", "-c", escape}},
				fakeagent.Say(fakeagent.Text("spawned")),
			}}}}, opts)
			require.NoError(t, err)
			require.Equal(t, acphost.ContainCgroup, c.Containment().Mode)
			_, err = c.Generate(acphost.Request{Prompt: "go"})
			require.NoError(t, err)
			pid := acphost.ReadPID(t, pidFile)
			t.Cleanup(func() { _ = killPID(pid) })
			require.NoError(t, c.Close())
			acphost.Eventually(t, "the daemon to be gone after Close", func() bool { return !acphost.ProcessRunning(pid) })
		})
	}
}

func mountHasNsdelegate(t *testing.T) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if _, post, ok := strings.Cut(line, " - "); ok && strings.HasPrefix(post, "cgroup2 ") {
			return strings.Contains(post, "nsdelegate")
		}
	}
	return false
}

func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
