// Package terminal runs the commands an ACP agent asks its host to run
// through terminal/create, terminal/output, terminal/wait_for_exit,
// terminal/kill and terminal/release.
//
// A [Manager] owns the terminals of one client. Each terminal is one
// command started in the background by [Manager.Create]; the other methods
// map one to one onto the ACP requests.
//
// # Commands
//
// By default Command is executed directly with Args as its arguments; no
// shell is involved, so no quoting, globbing or expansion happens. A
// Command without a slash is looked up in the PATH of the environment the
// command will get (Options.BaseEnv plus Spec.Env), not in the host's. A
// relative Command with a slash is resolved against Spec.Dir.
//
// With [Options].Shell set, for example {"/bin/sh", "-c"}, Command and Args
// are joined with single spaces, without any quoting, and the result is
// passed as the last argument of the shell. Create then only fails when
// the shell itself cannot be started; an unknown command shows up as the
// shell's exit status (127 for POSIX shells).
//
// The command gets stdin from the null device and one pipe for both stdout
// and stderr, so their output is interleaved in the order it was written.
// The pipe is read continuously, so a command never blocks on output.
//
// # Output limit
//
// Spec.OutputByteLimit > 0 keeps only the last OutputByteLimit bytes,
// dropping from the beginning and never starting in the middle of a UTF-8
// character; truncated reports that something was dropped. With 0 every
// byte is kept in memory until the terminal is released, so a chatty
// command can use unbounded memory: callers that do not trust the agent
// should set a limit.
//
// # Processes
//
// On Unix each command runs in its own process group, and every signal the
// package sends goes to the whole group, so a pipeline or a background job
// started by a shell is stopped with it. Processes that move themselves to
// another group or session (setsid, daemons) escape this. On systems
// without process groups (Windows) only the command itself is killed.
//
// [Manager.Kill] sends SIGTERM to the group and, if the command is still
// running after [Options].KillGrace, SIGKILL. [Manager.Release],
// [Manager.CloseOwner] and [Manager.Close] kill the same way.
//
// A terminal's exit status is reported once the command has exited and
// its output pipe is drained, so [Manager.Output] after
// [Manager.WaitForExit] returns the complete output. A process the command
// left behind (say "sleep 100 &") may hold the pipe open, so that wait is
// bounded by [Options].DrainTimeout:
//
//   - On Linux the command's exit is detected without reaping it, which
//     keeps its process-group id reserved. After waiting at most
//     DrainTimeout for the pipe to close, whatever is left in the group is
//     killed with SIGKILL, the command is reaped, and reading stops after
//     at most another DrainTimeout (for processes outside the group). Once
//     a terminal has exited none of its process group keeps running.
//   - Elsewhere the command is reaped at once and reading stops after at
//     most DrainTimeout; processes it left behind are not killed.
//
// # Concurrency
//
// Every terminal has one goroutine reading its output and one waiting for
// its exit and reaping it, plus one more while a kill is in progress.
// [Manager.Close] waits for all of them.
package terminal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acphost/acphost/internal/confine"
)

// ErrNotFound is returned for a terminal id that was never created by the
// [Manager] or has been released.
var ErrNotFound = errors.New("terminal: unknown terminal id")

// ErrClosed is returned by [Manager.Create] after [Manager.Close].
var ErrClosed = errors.New("terminal: manager closed")

// Defaults for Options, and the size of one read from an output pipe.
const (
	defaultKillGrace    = 2 * time.Second
	defaultDrainTimeout = time.Second
	readSize            = 32 << 10
)

// Spec is what terminal/create asks for.
type Spec struct {
	// Command is the program to run. See the package documentation for
	// how it is found and for Options.Shell.
	Command string
	// Args are the command's arguments, without the command itself.
	Args []string
	// Env holds "KEY=VALUE" entries added to the base environment; an
	// entry replaces a base entry with the same key.
	Env []string
	// Dir is the absolute working directory; "" keeps the host's. PWD is
	// set to it unless Env sets PWD.
	Dir string
	// OutputByteLimit > 0 keeps only the last OutputByteLimit bytes of
	// output, starting at a UTF-8 character boundary. 0 keeps all output
	// in memory, without bound.
	OutputByteLimit int
}

// ExitStatus is how a command ended: exactly one of Code or Signal is set
// once the process has exited.
type ExitStatus struct {
	// Code is the exit code if the process exited normally.
	Code *int
	// Signal is the name of the signal that killed the process, such as
	// "SIGKILL" or "SIGTERM".
	Signal string
}

// clone returns s with its own copy of Code.
func (s ExitStatus) clone() ExitStatus {
	if s.Code != nil {
		c := *s.Code
		s.Code = &c
	}
	return s
}

// Options configures a [Manager]. The zero value is ready to use.
type Options struct {
	// BaseEnv is the environment every command starts from; nil means
	// os.Environ() at the time of each Create.
	BaseEnv []string
	// Shell, if set, runs every command through a shell, for example
	// {"/bin/sh", "-c"}: Command and Args are joined with spaces, without
	// quoting, and passed as the last argument. nil runs Command directly.
	Shell []string
	// KillGrace is the time between SIGTERM and SIGKILL when a terminal
	// is killed; 0 means 2s.
	KillGrace time.Duration
	// DrainTimeout bounds how long the exit of a command is held back
	// while processes it left behind keep its output pipe open; 0 means
	// 1s. See the package documentation.
	DrainTimeout time.Duration
	// Confine, if set, starts every command confined by the kernel to
	// writing beneath Writable (see package confine); where that is not
	// available, Create fails.
	Confine  bool
	Writable []string
}

// Manager owns every terminal of one client. It is safe for concurrent
// use.
type Manager struct {
	opts Options

	mu     sync.Mutex
	terms  map[string]*term
	lastID int
	closed bool

	wg sync.WaitGroup // every goroutine of every terminal
}

// term is one terminal.
type term struct {
	owner string
	cmd   *exec.Cmd
	r     *os.File // read end of the output pipe

	exited   chan struct{} // closed when the command has exited (maybe not yet reaped)
	readDone chan struct{} // closed when the reader goroutine has stopped
	done     chan struct{} // closed when status is set and the output is complete

	mu      sync.Mutex
	out     output
	status  *ExitStatus
	reaped  bool // the process may have been reaped: its pid must not be signalled
	killing bool
}

// NewManager returns a [Manager] configured by o.
func NewManager(o Options) *Manager {
	if o.BaseEnv != nil {
		o.BaseEnv = slices.Clone(o.BaseEnv)
	}
	o.Shell = slices.Clone(o.Shell)
	o.Writable = slices.Clone(o.Writable)
	if o.KillGrace <= 0 {
		o.KillGrace = defaultKillGrace
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = defaultDrainTimeout
	}
	return &Manager{opts: o, terms: make(map[string]*term)}
}

// Create starts s in the background for the session owner and returns the
// new terminal's id ("term-1", "term-2", …) at once. An error means no
// process is running: the command could not be found or started, or s is
// invalid.
func (m *Manager) Create(owner string, s Spec) (id string, err error) {
	cmd, err := m.command(s)
	if err != nil {
		return "", err
	}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return "", ErrClosed
	}
	// Reserve the reader and the waiter before Close can start waiting.
	m.wg.Add(2)
	m.mu.Unlock()

	t, err := start(cmd, s.OutputByteLimit, m.starter())
	if err != nil {
		m.wg.Add(-2)
		return "", fmt.Errorf("terminal: start %q: %w", s.Command, err)
	}
	t.owner = owner
	go m.read(t)
	go m.supervise(t)

	m.mu.Lock()
	if m.closed {
		// Close ran while the process was starting and did not see it.
		m.mu.Unlock()
		m.kill(t)
		return "", ErrClosed
	}
	m.lastID++
	id = fmt.Sprintf("term-%d", m.lastID)
	m.terms[id] = t
	m.mu.Unlock()
	return id, nil
}

// command builds the exec.Cmd for s without starting it.
func (m *Manager) command(s Spec) (*exec.Cmd, error) {
	if s.Command == "" {
		return nil, errors.New("terminal: empty command")
	}
	if s.Dir != "" && !filepath.IsAbs(s.Dir) {
		return nil, fmt.Errorf("terminal: working directory %q is not absolute", s.Dir)
	}
	if s.OutputByteLimit < 0 {
		return nil, fmt.Errorf("terminal: negative output byte limit %d", s.OutputByteLimit)
	}
	for _, kv := range s.Env {
		if strings.IndexByte(kv, '=') < 1 {
			return nil, fmt.Errorf("terminal: environment entry %q is not KEY=VALUE", kv)
		}
	}

	base := m.opts.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	env := make([]string, 0, len(base)+1+len(s.Env))
	env = append(env, base...)
	if s.Dir != "" {
		// As os/exec does when Cmd.Env is nil: PWD must name the
		// working directory, not the host's.
		env = append(env, "PWD="+s.Dir)
	}
	env = append(env, s.Env...) // later entries win (os/exec dedups)

	name, args := s.Command, s.Args
	if len(m.opts.Shell) > 0 {
		name = m.opts.Shell[0]
		line := strings.Join(append([]string{s.Command}, s.Args...), " ")
		args = append(slices.Clone(m.opts.Shell[1:]), line)
	}
	path, err := lookPath(name, env)
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	cmd := &exec.Cmd{
		Path: path,
		Args: append([]string{name}, args...),
		Env:  env,
		Dir:  s.Dir,
		// Stdin nil: the null device.
	}
	setProcAttr(cmd, m.opts.Confine)
	return cmd, nil
}

// starter is how commands are started: confined, or by exec.Cmd.Start.
func (m *Manager) starter() func(*exec.Cmd) error {
	if m.opts.Confine {
		return func(cmd *exec.Cmd) error { return confine.Start(cmd, m.opts.Writable) }
	}
	return (*exec.Cmd).Start
}

// start starts cmd with both stdout and stderr on one pipe.
func start(cmd *exec.Cmd, limit int, startCmd func(*exec.Cmd) error) (*term, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// The same *os.File for both: os/exec passes one descriptor as fd 1
	// and 2 and starts no copying goroutines.
	cmd.Stdout, cmd.Stderr = w, w
	err = startCmd(cmd)
	w.Close() // the child has its own copy; EOF comes when every holder exits
	if err != nil {
		r.Close()
		return nil, err
	}
	return &term{
		cmd:      cmd,
		r:        r,
		exited:   make(chan struct{}),
		readDone: make(chan struct{}),
		done:     make(chan struct{}),
		out:      output{limit: limit},
	}, nil
}

// read drains the output pipe until EOF or until supervise closes it.
func (m *Manager) read(t *term) {
	defer m.wg.Done()
	defer close(t.readDone)
	buf := make([]byte, readSize)
	for {
		n, err := t.r.Read(buf)
		if n > 0 {
			t.mu.Lock()
			t.out.write(buf[:n])
			t.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// supervise waits for the command to exit, bounds the wait for its output,
// reaps it and publishes its exit status. It is the only goroutine that
// reaps the process.
func (m *Manager) supervise(t *term) {
	defer m.wg.Done()

	// Where possible, learn about the exit without reaping: the zombie
	// keeps the pid, and so the process-group id, from being reused, which
	// makes signalling the group safe until reaped is set below.
	held := waitExited(t.cmd.Process) == nil
	if held {
		close(t.exited)
		m.awaitDrain(t)
		t.signal(true) // whatever the command left in its group
	}
	t.mu.Lock()
	t.reaped = true
	t.mu.Unlock()
	_ = t.cmd.Wait() // non-zero exits are in ProcessState
	if !held {
		close(t.exited)
	}
	m.awaitDrain(t)
	t.r.Close() // unblocks the reader if something outside the group holds the pipe
	<-t.readDone

	st := exitStatus(t.cmd.ProcessState)
	t.mu.Lock()
	t.status = &st
	t.mu.Unlock()
	close(t.done)
}

// awaitDrain waits until the output pipe is at EOF or DrainTimeout passes.
func (m *Manager) awaitDrain(t *term) {
	select {
	case <-t.readDone:
		return
	default:
	}
	timer := time.NewTimer(m.opts.DrainTimeout)
	defer timer.Stop()
	select {
	case <-t.readDone:
	case <-timer.C:
	}
}

// signal sends SIGKILL (hard) or SIGTERM to t's process group, unless the
// process may already have been reaped.
func (t *term) signal(hard bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.reaped {
		_ = signalGroup(t.cmd.Process, hard)
	}
}

// kill starts killing t: SIGTERM now, SIGKILL after KillGrace if the
// command is still running. It does not wait. Only the first call acts.
func (m *Manager) kill(t *term) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reaped || t.killing {
		return
	}
	t.killing = true
	_ = signalGroup(t.cmd.Process, false)
	// supervise has not reaped the process, so its wg count is held and
	// this Add cannot race with a Wait on a zero counter.
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		timer := time.NewTimer(m.opts.KillGrace)
		defer timer.Stop()
		select {
		case <-t.exited:
			// Anything left in the group is killed by supervise.
		case <-timer.C:
			t.signal(true)
		}
	}()
}

// lookup returns the live terminal id.
func (m *Manager) lookup(id string) (*term, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.terms[id]
	if !ok {
		return nil, ErrNotFound
	}
	return t, nil
}

// Output returns the output captured so far, whether any of it was dropped
// because of the output byte limit, and the exit status once the command
// has exited (nil while it runs). After the exit status is reported the
// output is complete.
func (m *Manager) Output(id string) (output string, truncated bool, exit *ExitStatus, err error) {
	t, err := m.lookup(id)
	if err != nil {
		return "", false, nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.status != nil {
		st := t.status.clone()
		exit = &st
	}
	return t.out.String(), t.out.truncated, exit, nil
}

// WaitForExit waits until the command has exited and its output is
// complete, and returns its exit status. It returns ctx's error if ctx
// ends first.
func (m *Manager) WaitForExit(ctx context.Context, id string) (ExitStatus, error) {
	t, err := m.lookup(id)
	if err != nil {
		return ExitStatus{}, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return ExitStatus{}, ctx.Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status.clone(), nil
}

// Kill stops the command: SIGTERM to its process group, then SIGKILL after
// KillGrace if it is still running. It returns without waiting; the
// terminal stays valid, so Output and WaitForExit still work. Killing a
// terminal that has exited or is already being killed does nothing.
func (m *Manager) Kill(id string) error {
	t, err := m.lookup(id)
	if err != nil {
		return err
	}
	m.kill(t)
	return nil
}

// Release kills the command if it is still running, as [Manager.Kill]
// does, and forgets the terminal: afterwards its id is unknown. It returns
// without waiting for the process to end.
func (m *Manager) Release(id string) error {
	m.mu.Lock()
	t, ok := m.terms[id]
	delete(m.terms, id)
	m.mu.Unlock()
	if !ok {
		return ErrNotFound
	}
	m.kill(t)
	return nil
}

// CloseOwner releases every terminal created for the session owner, as
// [Manager.Release] does.
func (m *Manager) CloseOwner(owner string) {
	var ts []*term
	m.mu.Lock()
	for id, t := range m.terms {
		if t.owner == owner {
			ts = append(ts, t)
			delete(m.terms, id)
		}
	}
	m.mu.Unlock()
	for _, t := range ts {
		m.kill(t)
	}
}

// Close releases every terminal and returns once every process has been
// reaped and every goroutine of the Manager has ended; commands that
// ignore SIGTERM make it take KillGrace. Create fails with [ErrClosed]
// afterwards. Close is idempotent and always returns nil.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	ts := m.terms
	m.terms = make(map[string]*term)
	m.mu.Unlock()
	for _, t := range ts {
		m.kill(t)
	}
	m.wg.Wait()
	return nil
}
