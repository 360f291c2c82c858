package acphost_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/require"
)

const attackWatcherHostEnv = "ACPHOST_REVIEW2_WATCHER_HOST"

func init() {
	if dir := os.Getenv(attackWatcherHostEnv); dir != "" {
		os.Unsetenv(attackWatcherHostEnv)
		attackWatcherHostMain(dir)
	}
}

// killWatcher finds the host's watcher by the host directory in its own
// cgroup path and SIGKILLs it (same uid as the host, unconfined).
const killWatcher = `d=$(sed -n 's/^0:://p' /proc/self/cgroup); d=$(basename $(dirname "$d")); cat /proc/self/cgroup > '$DIR'/cg; pgrep -af "cgroup.kill.*$d" > '$DIR'/pg; pkill -KILL -f "cgroup.kill.*$d"; echo rc=$? >> '$DIR'/pg`

func attackWatcherHostMain(dir string) {
	// Agent A: unconfined, kills the host's watcher during its turn.
	pa, aa, ea, err := fakeagent.Command(fakeagent.Script{IgnoreEOF: true, Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Run: []string{"sh", "-c", strings.ReplaceAll(killWatcher, "$DIR", dir)}},
	}}}})
	if err != nil {
		panic(err)
	}
	a, err := acphost.Start(context.Background(), acphost.ACPOptions{Command: pa, Args: aa, Dir: dir, Process: acphost.ProcessOptions{Env: ea}})
	if err != nil {
		panic(err)
	}
	if _, err := a.Generate(acphost.Request{Prompt: "go"}); err != nil {
		panic(err)
	}
	// Agent B: a different, confined agent started afterwards, innocent.
	pb, ab, eb, err := fakeagent.Command(fakeagent.Script{IgnoreEOF: true})
	if err != nil {
		panic(err)
	}
	b, err := acphost.Start(context.Background(), acphost.ACPOptions{Command: pb, Args: ab, Dir: dir,
		Process: acphost.ProcessOptions{Env: eb, Confine: &acphost.Confinement{Writable: []string{dir}}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(a.PID(), b.PID(), a.Containment().Word())
	time.Sleep(time.Hour)
	os.Exit(1)
}

// An agent that kills the host's cgroup watcher (it runs as the host's
// user, outside every Landlock domain and cgroup of ours) would leave every
// agent of that host, confined ones included, alive after a host killed
// without Close: agents in watched cgroups get no parent-death signal. The
// host starts another watcher at once (this failed before it did). In PID
// namespaces (a normal user's case) the confined agent B dies by its
// DeathWatch, which A cannot name, and A by its parent-death signal.
func TestAttackKilledWatcherIsReplaced(t *testing.T) {
	dir := t.TempDir()
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), attackWatcherHostEnv+"="+dir)
	host.Stderr = os.Stderr
	out, err := host.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, host.Start())
	var a, b int
	var held string
	t.Cleanup(func() {
		_ = host.Process.Kill()
		_ = host.Wait()
		for _, p := range []int{a, b} {
			if p > 0 {
				_ = attackKillPID(p)
			}
		}
	})
	_, err = fmt.Fscan(out, &a, &b, &held)
	require.NoError(t, err)
	cg, _ := os.ReadFile(filepath.Join(dir, "cg"))
	pg, _ := os.ReadFile(filepath.Join(dir, "pg"))
	t.Logf("agent cgroup: %s; watcher: %s", cg, pg)
	require.True(t, acphost.ProcessRunning(a))
	require.True(t, acphost.ProcessRunning(b))
	switch held {
	case "cgroup":
		var watcher int
		_, err = fmt.Sscan(string(pg), &watcher)
		require.NoError(t, err, "the agent found the watcher")
		acphost.Eventually(t, "the watcher to be dead", func() bool { return !acphost.ProcessRunning(watcher) })
	case "namespace":
		// No cgroup watcher to kill; B's DeathWatch is outside A's
		// namespace, where A can name no process.
	default:
		t.Skipf("LOUD: neither a cgroup nor a PID namespace here (%s): nothing kills a dead host's agents but their parent-death signal", held)
	}
	require.NoError(t, host.Process.Kill())
	_ = host.Wait()
	deadline := time.Now().Add(3 * time.Second) // the watcher takes milliseconds; later, another acphost process on the machine may sweep the dead host
	for acphost.ProcessRunning(a) || acphost.ProcessRunning(b) {
		if time.Now().After(deadline) {
			t.Fatalf("agents outlived their SIGKILLed host: unconfined A alive=%v, confined B alive=%v",
				acphost.ProcessRunning(a), acphost.ProcessRunning(b))
		}
		time.Sleep(time.Millisecond)
	}
}

func attackKillPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
