//go:build linux

package cgroup

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// watchHostEnv makes the test binary a host: it makes a group, starts a
// daemon in it, prints the daemon's pid and waits to be killed.
const watchHostEnv = "ACPHOST_CGROUP_WATCH_HOST"

func init() {
	if os.Getenv(watchHostEnv) == "" {
		return
	}
	g, err := New("agent-")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	cmd := exec.Command("sh", "-c", `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!`)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	g.Attach(cmd.SysProcAttr)
	out, err := cmd.Output()
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Print(string(out))
	time.Sleep(time.Hour) // until killed
	os.Exit(1)
}

// A host killed without removing its groups (SIGKILL) has them killed by
// its watcher, daemons included, with no other host's sweep: the host
// runs in a cgroup of its own, which no other host scans.
func TestWatcherKillsTheGroupsOfADeadHost(t *testing.T) {
	parent, err := ownCgroup()
	if err != nil {
		t.Skipf("LOUD: no cgroup v2 group here: %v", err)
	}
	isolated := filepath.Join(parent, fmt.Sprintf("watch-test-%d", os.Getpid()))
	require.NoError(t, os.Mkdir(isolated, 0o755))
	t.Cleanup(func() { _ = removeTree(isolated, 5*time.Second) })
	fd, err := syscall.Open(isolated, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer syscall.Close(fd)

	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), watchHostEnv+"=1")
	host.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	out, err := host.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, host.Start())
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	daemon, err := strconv.Atoi(line[:len(line)-1])
	require.NoError(t, err, "the host reports its daemon: %q", line)
	require.True(t, alive(daemon))

	require.NoError(t, host.Process.Kill())
	_ = host.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(daemon) {
		if time.Now().After(deadline) {
			t.Fatal("the dead host's daemon lives on: no watcher killed its groups")
		}
		time.Sleep(time.Millisecond) // polling with a deadline
	}
}
