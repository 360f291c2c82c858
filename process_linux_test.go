package acphost_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/acphost/acphost"
	"github.com/stretchr/testify/require"
)

// A host killed without Close (SIGKILL, a crash) takes its agent with it.
func TestAgentDiesWithTheHost(t *testing.T) {
	t.Parallel()
	// With a cgroup the host's watcher kills the agent; held by its process
	// group only, the parent-death signal does.
	for _, contain := range []acphost.ContainMode{acphost.ContainAuto, acphost.ContainProcessGroup} {
		t.Run(fmt.Sprintf("contain=%q", contain), func(t *testing.T) {
			host := exec.Command(os.Args[0], "-test.run=^$")
			host.Env = append(os.Environ(), acphost.TestHostEnv+"="+string(contain)+"_")
			out, err := host.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, host.Start())
			t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
			var pid int
			_, err = fmt.Fscan(out, &pid)
			require.NoError(t, err, "the host reports its agent's PID")
			require.True(t, acphost.ProcessRunning(pid))
			require.NoError(t, host.Process.Kill())
			acphost.Eventually(t, "the agent to die with its host", func() bool { return !acphost.ProcessRunning(pid) })
		})
	}
}
