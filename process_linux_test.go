package acphost

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// A host killed without Close (SIGKILL, a crash) takes its agent with it.
func TestAgentDiesWithTheHost(t *testing.T) {
	t.Parallel()
	// With a cgroup the host's watcher kills the agent; held by its process
	// group only, the parent-death signal does.
	for _, contain := range []ContainMode{ContainAuto, ContainProcessGroup} {
		t.Run(fmt.Sprintf("contain=%q", contain), func(t *testing.T) {
			host := exec.Command(os.Args[0], "-test.run=^$")
			host.Env = append(os.Environ(), testHostEnv+"="+string(contain)+"_")
			out, err := host.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, host.Start())
			t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
			var pid int
			_, err = fmt.Fscan(out, &pid)
			require.NoError(t, err, "the host reports its agent's PID")
			require.True(t, processRunning(pid))
			require.NoError(t, host.Process.Kill())
			eventually(t, "the agent to die with its host", func() bool { return !processRunning(pid) })
		})
	}
}
