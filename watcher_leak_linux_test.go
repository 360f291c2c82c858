package acphost_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/require"
)

// An unconfined agent that may write the host's cgroup directory (root, or
// the owner of a delegated subtree) makes a group of its own there: after
// the last client's Close the host directory cannot be removed, so the
// watcher (and the directory) outlive every client, for the host's life.
func TestAttackForeignGroupDoesNotKeepTheWatcher(t *testing.T) {
	dir := t.TempDir()
	mk := `d=$(sed -n 's/^0:://p' /proc/self/cgroup); d=$(dirname "$d"); mkdir /sys/fs/cgroup/unified"$d"/evil && echo /sys/fs/cgroup/unified"$d" > '` + dir + `'/hostdir`
	path, args, env, err := fakeagent.Command(fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Run: []string{"sh", "-c", mk}},
	}}}})
	require.NoError(t, err)
	c, err := acphost.Start(t.Context(), acphost.ACPOptions{Command: path, Args: args, Dir: dir, Process: acphost.ProcessOptions{Env: env}})
	require.NoError(t, err)
	if held := c.Containment(); held.Mode != acphost.ContainCgroup {
		c.Close()
		t.Skipf("LOUD: the agent is held by a %s, not a cgroup (that needs root or a delegated cgroup): there is no host directory to keep: %v", held.Word(), held.Reason)
	}
	_, err = c.Generate(acphost.Request{Prompt: "go"})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	b, err := os.ReadFile(filepath.Join(dir, "hostdir"))
	require.NoError(t, err, "the agent made its group")
	hostDir := strings.TrimSpace(string(b))
	t.Cleanup(func() { _ = os.Remove(filepath.Join(hostDir, "evil")) })
	out, _ := exec.Command("pgrep", "-f", "cgroup.kill.*"+filepath.Base(hostDir)+"$").Output()
	_, statErr := os.Stat(hostDir)
	require.True(t, os.IsNotExist(statErr) && len(out) == 0,
		"after the last Close the host directory %s exists=%v and its watcher runs: pids %q", hostDir, statErr == nil, out)
}
