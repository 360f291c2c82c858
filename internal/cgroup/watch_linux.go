//go:build linux

package cgroup

import (
	"os"
	"os/exec"
	"syscall"
)

// A watcher kills the host's directory of groups when the host dies. It is
// a shell waiting to read its stdin, a pipe whose only writer is the host:
// when the host ends, however it ends (SIGKILL, a crash), the kernel closes
// that pipe, the read returns and the shell writes cgroup.kill of the
// host's directory, which kills every process of every group in it. A
// parent-death signal would reach only each group's first process, and
// the thread it follows would have to outlive the process it started.
type watcher struct {
	cmd  *exec.Cmd
	pipe *os.File // the host's write end: closing it stops the watcher
}

// watcherScript waits for its stdin to end, then kills the groups in $1.
const watcherScript = `read -r _; echo 1 > "$1/cgroup.kill"; exit 0`

// watch starts a watcher for dir, or returns nil where no shell can be
// started (the host's groups then outlive a host that dies, until the
// next host sweeps them).
func watch(dir string) *watcher {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", watcherScript, "sh", dir)
	cmd.Stdin = r
	// A process group of its own: the terminal's Ctrl-C for the host must
	// not end the watcher before it is needed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil
	}
	return &watcher{cmd: cmd, pipe: w}
}

// stop ends the watcher (its directory is gone) and waits for it.
func (w *watcher) stop() {
	if w == nil {
		return
	}
	w.pipe.Close()
	_ = w.cmd.Wait()
}
