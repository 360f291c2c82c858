//go:build linux

package cgroup

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// A watcher kills the host's directory of groups when the host dies. It is
// a shell waiting to read its stdin, a pipe whose only writer is the host:
// when the host ends, however it ends (SIGKILL, a crash), the kernel closes
// that pipe, the read returns and the shell writes cgroup.kill of the
// host's directory, which kills every process of every group in it. A
// parent-death signal would reach only each group's first process, and
// the thread it follows would have to outlive the process it started.
//
// The shell runs as the host's user: an agent that may signal the host's
// processes (one not confined, or confined before Landlock ABI 6) can kill
// it. The host then starts another at once; an agent that kills the
// watcher and the host together outlives the host (see SPEC.md, known
// limits).
type watcher struct {
	dir     string
	mu      sync.Mutex
	cmd     *exec.Cmd
	pipe    *os.File // the host's write end: closing it stops the shell
	stopped bool
	done    chan struct{} // closed when the respawning goroutine has ended
}

// watcherScript waits for its stdin to end, then kills the groups in $1.
const watcherScript = `read -r _; echo 1 > "$1/cgroup.kill"; exit 0`

// watch starts a watcher for dir, or returns nil where no shell can be
// started (the host's groups then outlive a host that dies, until the
// next host sweeps them).
func watch(dir string) *watcher {
	w := &watcher{dir: dir, done: make(chan struct{})}
	if !w.spawn() {
		return nil
	}
	go w.respawn()
	return w
}

// spawn starts the shell; w.mu is held or w is not shared yet.
func (w *watcher) spawn() bool {
	r, pw, err := os.Pipe()
	if err != nil {
		return false
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", watcherScript, "sh", w.dir)
	cmd.Stdin = r
	// A process group of its own: the terminal's Ctrl-C for the host must
	// not end the watcher before it is needed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return false
	}
	w.cmd, w.pipe = cmd, pw
	return true
}

// respawn waits for each shell to end and starts another while the host
// lives and the watcher was not stopped.
func (w *watcher) respawn() {
	defer close(w.done)
	for {
		w.mu.Lock()
		cmd := w.cmd
		w.mu.Unlock()
		_ = cmd.Wait()
		w.mu.Lock()
		if w.stopped || !w.spawn() {
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// watched reports whether a shell is watching.
func (w *watcher) watched() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.stopped
}

// stop ends the watcher (its directory is gone) and waits for it.
func (w *watcher) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.stopped = true
	w.pipe.Close()
	w.mu.Unlock()
	<-w.done
}
