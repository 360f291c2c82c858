// Package proc owns local child processes: the process group (and on
// Linux and FreeBSD the parent-death signal, followed from an OS thread
// kept locked while the child lives), the cgroup or PID namespace a child
// is started in, Landlock confinement (package confine), and for an agent
// the three pipes, the stderr pump and its tail, the stop ladder and the
// exit.
//
// [Process] is one agent subprocess; package terminal uses the group,
// thread and exit helpers for its commands.
package proc

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/acphost/acphost/internal/cgroup"
	"github.com/acphost/acphost/internal/fsview"
)

// groupRemoveTimeout bounds the wait for a killed cgroup to empty (a
// process in uninterruptible sleep can outlast it; the group is then left,
// with a warning, for the next host's sweep).
const groupRemoveTimeout = 5 * time.Second

// stderrDrainWait bounds how long Outcome waits for stderr to be drained
// after the exit: a grandchild may hold it open.
const stderrDrainWait = 200 * time.Millisecond

// Spec is how to start an agent process.
type Spec struct {
	Command string
	Args    []string
	Env     []string // the whole environment
	Dir     string   // "": the host's
	// Confined starts the process (and all it starts) restricted to
	// writing beneath Writable (confine.RestrictThread), in a session of
	// its own.
	Confined bool
	Writable []string
	// View, with Confined, starts the process in a private view of the
	// file system (package fsview) that Landlock then confines to its
	// places and Writable. A start that cannot make the view fails with
	// an error matching fsview.ErrUnavailable.
	View *fsview.View
	// Group is the cgroup to start in, which the Process then owns; nil:
	// the process group only.
	Group *cgroup.Group
	// GroupRequired fails a start the kernel refuses in Group; otherwise
	// it is tried once more without it (see Process.Fallback).
	GroupRequired bool
	// Namespace starts the process, when not in Group (nil, or a start
	// there refused), as PID 1 of a PID namespace of its own
	// (SetNamespace). NamespaceRequired fails a start the kernel refuses
	// so (the error matches ErrNoNamespace); otherwise it is tried once
	// more with the process group only.
	Namespace, NamespaceRequired bool
	// Log receives the warning for a cgroup that did not empty.
	Log *slog.Logger
}

// Process is one agent subprocess: its pipes, its stderr pump and its
// exit.
type Process struct {
	spec   Spec
	cmd    *exec.Cmd
	stdin  *os.File // our write end
	stdout *os.File // our read end
	stderr *os.File // our read end

	tail       Tail
	stderrDone chan struct{}
	exited     chan struct{} // closed once cmd.Wait returned
	exitErr    error

	exitMu sync.Mutex
	reaped bool   // exited is closed
	onExit func() // what OnExit asked to run at the exit

	locked     bool          // startAndWait's thread is locked for the parent-death signal
	pidfd      int           // the agent's pidfd, for the exit watcher; -1: none
	group      *cgroup.Group // nil: held by the process group only
	unused     *cgroup.Group // the group a retried start left empty
	namespaced bool          // PID 1 of a PID namespace of its own
	death      *DeathWatch   // kills a namespaced confined process with the host
	fallback   error         // why a start was retried without the group or the namespace
}

// Start spawns the agent in its own process group (and cgroup) with all
// three pipes connected, from a thread that stays locked while it runs
// (see Go). Call Pump, then Stop. On error nothing is left running and
// s.Group is removed.
func Start(s Spec) (*Process, error) {
	p := &Process{spec: s, group: s.Group, stderrDone: make(chan struct{}), exited: make(chan struct{})}
	p.cmd = p.command()
	inR, inW, err := os.Pipe()
	if err != nil {
		p.removeGroup()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		p.removeGroup()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		p.removeGroup()
		return nil, err
	}
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, errW
	started := make(chan error, 1)
	go p.startAndWait(started)
	if err := <-started; err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		p.removeGroup()
		return nil, err
	}
	if p.unused != nil {
		_ = p.unused.Remove(groupRemoveTimeout) // empty: nothing was started in it
		p.unused = nil
	}
	closeAll(inR, outW, errW)
	p.stdin, p.stdout, p.stderr = inW, outR, errR
	return p, nil
}

// command builds a fresh cmd (a start retried without the cgroup needs
// one).
func (p *Process) command() *exec.Cmd {
	cmd := exec.Command(p.spec.Command, p.spec.Args...)
	cmd.Env = p.spec.Env
	cmd.Dir = p.spec.Dir
	SetGroup(cmd, p.spec.Confined)
	return cmd
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// startAndWait starts the agent and has its exit waited for, closing
// exited once it is reaped. Only an agent with a parent-death signal needs
// this goroutine's OS thread locked while it runs (the signal follows the
// thread that started it), and this goroutine then waits for the exit: one
// neither confined (StartRestricted starts it from a thread that ends
// before it runs) nor in a watched cgroup (the host's watcher kills it
// with the host). Any other agent's exit is waited for by the host's one
// exit watcher where there is one (Linux: see exitWatcher), so warm agents
// cost neither an OS thread nor a goroutine each for their exit.
func (p *Process) startAndWait(started chan<- error) {
	if err := p.start(); err != nil {
		p.unlock()
		close(p.exited)
		started <- err
		return
	}
	started <- nil
	if p.locked { // the thread must live until the agent is reaped
		exited := make(chan struct{})
		if watchExitAsync(p.pidfd, func() { close(exited) }) {
			<-exited
			p.death.Stop() // a zombie: its pid is still its own
		}
		p.reap()
		return
	}
	if !watchExitAsync(p.pidfd, func() { p.death.Stop(); p.reap() }) {
		p.reap() // no pidfd: Wait blocks, holding a thread
	}
}

// reap waits for the exited agent (at once: it is a zombie, unless no
// pidfd told of the exit), unlocks the thread that started it, closes
// exited and runs what OnExit asked for.
func (p *Process) reap() {
	p.exitErr = p.cmd.Wait()
	p.death.Stop() // if the exit was not seen before (no pidfd)
	p.unlock()
	p.exitMu.Lock()
	p.reaped = true
	f := p.onExit
	p.exitMu.Unlock()
	close(p.exited)
	if f != nil {
		f()
	}
}

// OnExit has f run once the agent has exited and been reaped (after
// Exited is closed), on a goroutine that ends with f; at once, on a new
// one, if it already has. Call it at most once.
func (p *Process) OnExit(f func()) {
	p.exitMu.Lock()
	if !p.reaped {
		p.onExit = f
		p.exitMu.Unlock()
		return
	}
	p.exitMu.Unlock()
	go f()
}

// parentDeath reports whether cmd is to get a parent-death signal, and
// if so locks this goroutine's thread for it (see startAndWait).
func (p *Process) parentDeath(cmd *exec.Cmd, group *cgroup.Group) {
	if p.spec.Confined || group != nil && group.Watched() {
		clearParentDeathSignal(cmd.SysProcAttr)
		return
	}
	if !p.locked {
		runtime.LockOSThread()
		p.locked = true
	}
}

func (p *Process) unlock() {
	if p.locked {
		runtime.UnlockOSThread()
	}
}

// start starts the agent: in its cgroup if it has one, else (or where the
// kernel refuses the start there: no internal processes, a threaded group,
// permissions, a kernel without CLONE_INTO_CGROUP) in a PID namespace if
// the spec asks for one, else (or where that is refused) with its process
// group only. A refused step is an error where the spec requires it, and
// otherwise recorded in fallback.
func (p *Process) start() error {
	var reasons []error
	if p.group != nil {
		p.parentDeath(p.cmd, p.group)
		watchExit(p.cmd.SysProcAttr, &p.pidfd)
		p.group.Attach(p.cmd.SysProcAttr)
		err := p.launch(p.cmd)
		if err == nil {
			return nil
		}
		if errors.Is(err, fsview.ErrUnavailable) {
			return err // the view's, not the group's: the caller decides
		}
		if p.spec.GroupRequired {
			return fmt.Errorf("%w (in cgroup %s)", err, p.group.Path())
		}
		reasons = append(reasons, fmt.Errorf("%w: starting the agent in %s: %v", cgroup.ErrUnavailable, p.group.Path(), err))
		p.unused, p.group = p.group, nil // removed by Start, off this locked thread
		p.cmd = p.retry()
	}
	if p.spec.Namespace {
		SetNamespace(p.cmd.SysProcAttr)
		p.parentDeath(p.cmd, nil)
		watchExit(p.cmd.SysProcAttr, &p.pidfd)
		err := p.launch(p.cmd)
		if err == nil {
			p.namespaced = true
			if p.spec.Confined { // no parent-death signal: see StartRestricted
				p.death = WatchDeath(p.cmd.Process.Pid)
			}
			p.fallback = errors.Join(reasons...)
			return nil
		}
		if errors.Is(err, fsview.ErrUnavailable) {
			return err
		}
		if p.spec.NamespaceRequired {
			return noNamespace(err)
		}
		reasons = append(reasons, noNamespace(err))
		p.cmd = p.retry()
	}
	p.parentDeath(p.cmd, nil)
	watchExit(p.cmd.SysProcAttr, &p.pidfd)
	if err := p.launch(p.cmd); err != nil {
		return err // refused plainly too: not for the cgroup or the namespace
	}
	p.fallback = errors.Join(reasons...)
	return nil
}

// retry is a fresh command for a start tried once more (a started or
// failed exec.Cmd cannot be reused), on the same pipes.
func (p *Process) retry() *exec.Cmd {
	cmd := p.command()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr
	return cmd
}

// launch starts cmd, confined if the spec says so.
func (p *Process) launch(cmd *exec.Cmd) error {
	if p.spec.Confined && p.spec.View != nil {
		return fsview.Start(cmd, *p.spec.View, p.spec.Writable)
	}
	if p.spec.Confined {
		return StartRestricted(cmd, p.spec.Writable)
	}
	return cmd.Start()
}

// Fallback is why the agent runs without the cgroup of Spec.Group (a
// retried start, matching cgroup.ErrUnavailable) or the namespace of
// Spec.Namespace (matching ErrNoNamespace); nil when it runs as asked.
func (p *Process) Fallback() error { return p.fallback }

// Namespaced reports whether the agent is PID 1 of a PID namespace of its
// own.
func (p *Process) Namespaced() bool { return p.namespaced }

// Cgroup is the directory of the agent's cgroup, "" for none.
func (p *Process) Cgroup() string {
	if p.group == nil {
		return ""
	}
	return p.group.Path()
}

// Pid is the agent's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stdout is what the agent writes.
func (p *Process) Stdout() *os.File { return p.stdout }

// Stdin is what the agent reads.
func (p *Process) Stdin() *os.File { return p.stdin }

// removeGroup kills what is left in the agent's cgroup, waits for it to
// empty and removes it.
func (p *Process) removeGroup() {
	if p.group == nil {
		return
	}
	if err := p.group.Remove(groupRemoveTimeout); err != nil && p.spec.Log != nil {
		p.spec.Log.Warn("acphost: the agent's cgroup did not empty", "err", err)
	}
	p.group = nil
}

// Pump starts draining stderr into the tail and forward (optional; a
// forward that fails is dropped), on a goroutine counted in wg that ends
// once stderr is closed (Stop).
func (p *Process) Pump(wg *sync.WaitGroup, forward io.Writer) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(p.stderrDone)
		p.pumpStderr(forward)
	}()
}

// stderrChunk is the stderr pump's buffer: small, since every warm agent
// holds one for its life and stderr is not on the hot path.
const stderrChunk = 4 << 10

func (p *Process) pumpStderr(forward io.Writer) { Drain(p.stderr, &p.tail, forward) }

// Drain copies r into tail and forward (a forward that fails is dropped)
// until r ends.
func Drain(r io.Reader, tail *Tail, forward io.Writer) {
	buf := make([]byte, stderrChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			tail.Write(buf[:n])
			if forward != nil {
				if _, werr := forward.Write(buf[:n]); werr != nil {
					forward = nil
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// Tail is the end of the agent's stderr so far.
func (p *Process) Tail() string { return p.tail.String() }

// Exited is closed once the agent has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Outcome describes the exit: how it ended, the stderr tail and cmd.Wait's
// error. Call it only after Exited is closed. It waits (bounded) for
// stderr to be drained so the last line is included.
func (p *Process) Outcome() (Exit, string, error) {
	select {
	case <-p.stderrDone:
	case <-time.After(stderrDrainWait):
	}
	exit, err := p.Result()
	return exit, p.tail.String(), err
}

// Result is how the process ended and cmd.Wait's error, at once: for a
// process whose stderr is not pumped (its owner reads it), whose tail
// Outcome would wait for in vain. Call it only after Exited is closed.
func (p *Process) Result() (Exit, error) { return ExitOf(p.cmd.ProcessState), p.exitErr }

// Stop ends the process: stdin EOF, grace, SIGTERM to the group, grace,
// SIGKILL to the group and the cgroup. It returns once the process has
// exited, every process left in its group has been sent SIGKILL, its
// cgroup (every process it started, however detached) is empty and
// removed, and our pipe ends are closed. Call it once.
func (p *Process) Stop(grace time.Duration) {
	p.stdin.Close()
	steps := []func(){
		func() { p.signalGroup(syscall.SIGTERM) },
		func() {
			p.signalGroup(syscall.SIGKILL)
			if p.group != nil {
				_ = p.group.Kill()
			}
		},
	}
	for _, step := range steps {
		if p.WaitExit(grace) {
			break
		}
		step()
	}
	<-p.exited
	// Reaped, but a group id is not reused while the group has members.
	p.signalGroup(syscall.SIGKILL) // grandchildren left in the group
	p.removeGroup()                // and every process that left it
	p.stdout.Close()
	p.stderr.Close()
}

// signalGroup sends sig to the agent's process group (where there are
// none, SIGKILL to the agent; other signals are then not sent).
func (p *Process) signalGroup(sig syscall.Signal) {
	_ = SignalGroup(p.cmd.Process, sig)
}

// WaitExit reports whether the process exits within d.
func (p *Process) WaitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// Stderr is our read end of the process's stderr, for a caller that
// drains it itself instead of Pump.
func (p *Process) Stderr() *os.File { return p.stderr }
