package acphost

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/acphost/acphost/internal/cgroup"
	"github.com/acphost/acphost/internal/confine"
)

// stderrTailBytes bounds the stderr kept for error messages.
const stderrTailBytes = 64 << 10

// process is one agent subprocess: its pipes, its stderr pump and its exit.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our write end
	stdout *os.File // our read end
	stderr *os.File // our read end

	tail       tailBuffer
	stderrDone chan struct{}
	exited     chan struct{} // closed once cmd.Wait returned
	exitErr    error
	confine    *Confinement // nil: not confined

	contain     ContainMode
	build       func() *exec.Cmd // a fresh cmd, for a start retried without the cgroup
	group       *cgroup.Group    // nil: held by the process group only
	unused      *cgroup.Group    // the group a retried start left empty
	containment Containment
	log         *slog.Logger
}

// groupRemoveTimeout bounds the wait for a killed cgroup to empty (a
// process in uninterruptible sleep can outlast it; the group is then left,
// with a warning, for the next host's sweep).
const groupRemoveTimeout = 5 * time.Second

// Confinement has the kernel (Linux Landlock) confine the agent process,
// and every process it starts (its tools, its shell commands, its MCP
// servers, and the commands the host runs for it through TerminalOptions),
// to creating, writing, removing, renaming and linking files beneath
// Writable, and writing to /dev/null, /dev/zero, /dev/full and
// pseudo-terminals (/dev/ptmx, /dev/pts: shell tools open them). Reading
// stays allowed everywhere. Symlinks, subprocesses and cd do not widen it:
// the kernel checks the directories a file is reached through. The agent
// also runs in a session of its own, without a controlling terminal to
// type into, and set-user-id programs lose their powers. It needs Linux
// 5.13 or later with Landlock: elsewhere Start fails with ErrUnsupported
// rather than run the agent unconfined.
//
// Dir is not implied. List it for an agent that edits the project; leave it
// out for one that must only read it, whatever it is told (a plan mode the
// agent's own tools cannot get around). Agents keep state of their own, for
// example ~/.claude or ~/.codex, a cache and a temporary directory: list
// what the agent needs, or it fails in its own way.
//
// From Linux 6.12 (Landlock ABI 6) it also cannot signal processes outside
// its confinement (the host, the user's other processes) nor connect to
// abstract unix sockets created outside it.
//
// Not covered: file modes, owners, times and extended attributes;
// truncating a file before Linux 6.2 (Landlock ABI 3); a file outside
// reached through a hard link inside Writable; writing to the user's other
// terminals (and, for an agent running as root, typing into them); reading
// and the network. /dev/shm is not writable (POSIX semaphores fail). See
// SPEC.md.
type Confinement struct {
	Writable []string // absolute directories
}

// startProcess spawns the agent in its own process group (and cgroup, see
// ACPOptions.Contain) with all three pipes connected. stderr is drained
// into forward (optional) and a tail.
func startProcess(opts *ACPOptions) (*process, error) {
	build := func() *exec.Cmd {
		cmd := exec.Command(opts.Command, opts.Args...)
		cmd.Env = opts.Env
		if !opts.CleanEnv {
			cmd.Env = append(os.Environ(), opts.Env...)
		}
		cmd.Dir = opts.Dir
		setProcessGroup(cmd, opts.Confine != nil)
		return cmd
	}
	group, containment, err := newContainment(opts.Contain, opts.Logger)
	if err != nil {
		return nil, err
	}
	cmd := build()
	p := &process{cmd: cmd, stderrDone: make(chan struct{}), exited: make(chan struct{}), confine: opts.Confine,
		build: build, group: group, containment: containment, log: opts.Logger, contain: opts.Contain}
	var childEnds []*os.File
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		return
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	childEnds = append(childEnds, inR, outW, errW)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	started := make(chan error, 1)
	if p.confine != nil {
		confine.Go(func() { p.startAndWait(started) })
	} else {
		go p.startAndWait(started)
	}
	if err := <-started; err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		p.removeGroup()
		return nil, err
	}
	if p.unused != nil {
		_ = p.unused.Remove(groupRemoveTimeout) // empty: nothing was started in it
		p.unused = nil
	}
	closeAll(childEnds...)
	p.stdin, p.stdout, p.stderr = inW, outR, errR
	return p, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// startAndWait starts the agent and waits for its exit, closing exited, on
// one OS thread it keeps locked: the parent-death signal (see
// setProcessGroup) follows the thread that started the agent, which must
// therefore live as long as the agent does. A confined agent is started
// from a restricted thread (from confine.Go), never unlocked: the runtime
// ends it with this goroutine.
func (p *process) startAndWait(started chan<- error) {
	defer close(p.exited)
	runtime.LockOSThread()
	if p.confine == nil {
		defer runtime.UnlockOSThread()
	} else if err := confine.RestrictThread(p.confine.Writable); err != nil {
		started <- err
		return
	}
	if err := p.start(); err != nil {
		started <- err
		return
	}
	started <- nil
	p.exitErr = p.cmd.Wait()
}

// start starts the agent, in its cgroup if it has one. A start the kernel
// refuses there (no internal processes, a threaded group, permissions, a
// kernel without CLONE_INTO_CGROUP) is tried once more without the cgroup
// under ContainAuto, with a warning and Containment saying so.
func (p *process) start() error {
	if p.group == nil {
		return p.cmd.Start()
	}
	p.group.Attach(p.cmd.SysProcAttr)
	err := p.cmd.Start()
	if err == nil {
		return nil
	}
	if p.contain == ContainCgroup {
		return fmt.Errorf("%w (in cgroup %s)", err, p.group.Path())
	}
	retry := p.build()
	retry.Stdin, retry.Stdout, retry.Stderr = p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr
	if rerr := retry.Start(); rerr != nil {
		return err
	}
	p.cmd = retry
	reason := fmt.Errorf("%w: starting the agent in %s: %v", cgroup.ErrUnavailable, p.group.Path(), err)
	_ = containFallback(ContainAuto, reason, p.log)
	p.containment = fallbackContainment(reason)
	p.unused, p.group = p.group, nil // removed by startProcess: this thread may be restricted
	return nil
}

// removeGroup kills what is left in the agent's cgroup, waits for it to
// empty and removes it.
func (p *process) removeGroup() {
	if p.group == nil {
		return
	}
	if err := p.group.Remove(groupRemoveTimeout); err != nil {
		p.log.Warn("acphost: the agent's cgroup did not empty", "err", err)
	}
	p.group = nil
}

// run drains stderr; with startAndWait, it is the process's goroutines.
func (p *process) run(wg *sync.WaitGroup, forward io.Writer) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(p.stderrDone)
		p.pumpStderr(forward)
	}()
}

func (p *process) pumpStderr(forward io.Writer) {
	buf := make([]byte, 32<<10)
	for {
		n, err := p.stderr.Read(buf)
		if n > 0 {
			p.tail.Write(buf[:n])
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

// exitError describes the exit; call it only after exited is closed. It
// waits (bounded) for stderr to be drained so the last line is included.
func (p *process) exitError(duringTurn bool) *ExitError {
	select {
	case <-p.stderrDone:
	case <-time.After(200 * time.Millisecond): // a grandchild may hold stderr open
	}
	e := &ExitError{ExitCode: -1, Stderr: p.tail.String(), DuringTurn: duringTurn, Err: p.exitErr}
	if st := p.cmd.ProcessState; st != nil {
		e.ExitCode = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal().String()
		}
	}
	return e
}

// terminate ends the process: stdin EOF, grace, SIGTERM to the group,
// grace, SIGKILL to the group and the cgroup. It returns once the process
// has exited, every process left in its group has been sent SIGKILL, and
// its cgroup (every process it started, however detached) is empty and
// removed.
func (p *process) terminate(grace time.Duration) {
	p.stdin.Close()
	steps := []func(){
		func() { signalGroup(p.cmd, syscall.SIGTERM) },
		func() {
			signalGroup(p.cmd, syscall.SIGKILL)
			if p.group != nil {
				_ = p.group.Kill()
			}
		},
	}
	for _, step := range steps {
		if p.waitExit(grace) {
			break
		}
		step()
	}
	<-p.exited
	signalGroup(p.cmd, syscall.SIGKILL) // grandchildren left in the group
	p.removeGroup()                     // and every process that left it
	p.stdout.Close()
	p.stderr.Close()
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// tailBuffer keeps the last stderrTailBytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - stderrTailBytes; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// checkConfinement fails early when confinement is asked for where the
// kernel cannot give it, or with a relative directory.
func checkConfinement(o *ACPOptions) error {
	if err := checkContain(o); err != nil {
		return err
	}
	var writable []string
	switch {
	case o.Confine != nil:
		writable = o.Confine.Writable
	case o.Terminal == nil || !o.Terminal.Confine:
		return nil
	}
	if !confine.Available() {
		return fmt.Errorf("acphost: confinement: %w (%w)", confine.ErrUnsupported, ErrUnsupported)
	}
	if o.Terminal != nil {
		writable = append(slices.Clone(writable), o.Terminal.Writable...)
	}
	for _, dir := range writable {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("acphost: confinement: writable directory %q is not absolute", dir)
		}
	}
	return nil
}
