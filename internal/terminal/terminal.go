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
// character; truncated reports that something was dropped. The limit is
// the smaller of Spec.OutputByteLimit (when > 0) and [Options].MaxOutputBytes
// (when > 0): a caller that does not trust who writes the Spec sets
// MaxOutputBytes, which the Spec cannot raise. With neither, every byte is
// kept in memory until the terminal is released.
//
// [Options].MaxTerminals bounds the terminals whose command is still
// running or not yet released; past it Create fails with [ErrTooMany].
// Released terminals whose command is still ending (SIGTERM, KillGrace)
// do not count against it: when Create finds the cap reached it ends them
// at once with SIGKILL and waits for them before it decides.
//
// # Processes
//
// On Unix each command runs in its own process group, and every signal the
// package sends goes to the whole group, so a pipeline or a background job
// started by a shell is stopped with it. On Linux each command also runs
// in a cgroup v2 group of its own (package cgroup), entered as it is
// cloned, unless [Options].Cgroup is CgroupOff: every SIGKILL the package
// sends then goes to the whole cgroup, so processes that moved to another
// group or session (setsid, daemons, double forks) die with the terminal
// too. Where a cgroup cannot be had, CgroupAuto falls back to the process
// group and calls [Options].OnFallback once; CgroupRequired fails Create.
// A command in no cgroup runs, with [Options].Namespace set, as PID 1 of a
// PID namespace of its own (proc.SetNamespace): when it dies the kernel
// kills everything left in the namespace, daemons included; NamespaceAuto
// falls back to the process group where that is refused (OnFallback),
// NamespaceRequired fails Create. As PID 1 the command ignores a SIGTERM it
// has no handler for, so Kill's SIGKILL after KillGrace ends it. Processes
// that leave the process group otherwise escape, as they do on other
// systems. On systems without process groups (Windows) only the command
// itself is killed.
//
// On Linux a command is started with a parent-death signal (SIGKILL) from
// an OS thread that stays locked until the command has been reaped (the
// signal follows the thread that forked, not the process), so a host that
// dies without Close (SIGKILL, a crash) takes its commands with it; what
// they left running in other process groups lives on until the next host
// sweeps the dead host's cgroups (package cgroup).
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
//     DrainTimeout for the pipe to close, whatever is left in the group
//     (and in its cgroup) is killed with SIGKILL, the command is reaped,
//     and reading stops after at most another DrainTimeout (for processes
//     outside the group without a cgroup). Once a terminal has exited none
//     of its process group, and none of its cgroup, keeps running: the
//     cgroup is removed once empty.
//   - Elsewhere the command is reaped at once and reading stops after at
//     most DrainTimeout; processes it left behind are not killed.
//
// # Concurrency
//
// Every terminal has one goroutine reading its output and one starting
// the command, waiting for its exit and reaping it (locked to its OS
// thread), plus one more while a kill is in progress.
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
	"syscall"
	"time"

	"github.com/acphost/acphost/internal/cgroup"
	"github.com/acphost/acphost/internal/proc"
)

// ErrNotFound is returned for a terminal id that was never created by the
// [Manager] or has been released.
var ErrNotFound = errors.New("terminal: unknown terminal id")

// ErrClosed is returned by [Manager.Create] after [Manager.Close].
var ErrClosed = errors.New("terminal: manager closed")

// ErrTooMany is matched by the error of [Manager.Create] when
// Options.MaxTerminals terminals are live.
var ErrTooMany = errors.New("terminal: too many terminals")

// CgroupMode says whether commands run in cgroups of their own; see the
// package documentation.
type CgroupMode int

const (
	CgroupAuto     CgroupMode = iota // a cgroup where possible, else the process group (OnFallback)
	CgroupRequired                   // a cgroup, or Create fails (the error matches cgroup.ErrUnavailable)
	CgroupOff                        // the process group only
)

// NamespaceMode says whether a command not in a cgroup runs as PID 1 of a
// PID namespace of its own (proc.SetNamespace); see the package
// documentation.
type NamespaceMode int

const (
	NamespaceOff      NamespaceMode = iota // the process group only
	NamespaceAuto                          // a namespace where possible, else the process group (OnFallback)
	NamespaceRequired                      // a namespace, or Create fails (the error matches proc.ErrNoNamespace)
)

// Defaults for Options, and the size of one read from an output pipe.
const (
	defaultKillGrace    = 2 * time.Second
	defaultDrainTimeout = time.Second
	readSize            = 32 << 10
	removeTimeout       = 5 * time.Second // for a killed cgroup to empty
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

// exitStatus converts the state of a reaped process.
func exitStatus(ps *os.ProcessState) ExitStatus {
	e := proc.ExitOf(ps)
	if e.Signaled {
		return ExitStatus{Signal: signalName(e.Signal)}
	}
	return ExitStatus{Code: &e.Code}
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
	// MaxOutputBytes > 0 caps every terminal's kept output, whatever its
	// Spec.OutputByteLimit; 0: no cap beyond the Spec's.
	MaxOutputBytes int
	// MaxTerminals > 0 caps the live terminals; 0: no cap.
	MaxTerminals int
	// Cgroup says whether each command runs in a cgroup of its own.
	Cgroup CgroupMode
	// Namespace says whether a command that runs in no cgroup runs in a
	// PID namespace of its own; zero: it does not.
	Namespace NamespaceMode
	// OnFallback, if set, is called once, from Create, with the reason
	// when CgroupAuto finds no cgroup (or NamespaceAuto no namespace) and a
	// command runs held otherwise: namespaced reports whether by a PID
	// namespace (else by its process group).
	OnFallback func(namespaced bool, reason error)
}

// Manager owns every terminal of one client. It is safe for concurrent
// use.
type Manager struct {
	opts Options

	mu       sync.Mutex
	terms    map[string]*term
	live     int                // terminals whose supervisor has not finished
	dying    map[*term]struct{} // released, killed, not finished
	lastID   int
	closed   bool
	fellBack bool // OnFallback was called

	wg sync.WaitGroup // every goroutine of every terminal
}

// term is one terminal.
type term struct {
	owner string
	cmd   *exec.Cmd
	r     *os.File         // read end of the output pipe
	group *cgroup.Group    // nil: a PID namespace or the process group only
	death *proc.DeathWatch // kills a namespaced confined command with the host

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
	return &Manager{opts: o, terms: make(map[string]*term), dying: make(map[*term]struct{})}
}

// Create starts s in the background for the session owner and returns the
// new terminal's id ("term-1", "term-2", …) at once. An error means no
// process is running: the command could not be found or started, s is
// invalid, MaxTerminals are live ([ErrTooMany]) or a required cgroup could
// not be had.
func (m *Manager) Create(owner string, s Spec) (id string, err error) {
	if _, err := m.command(s); err != nil {
		return "", err
	}
	if err := m.reserve(); err != nil {
		return "", err
	}
	t := &term{
		owner:    owner,
		exited:   make(chan struct{}),
		readDone: make(chan struct{}),
		done:     make(chan struct{}),
		out:      output{limit: outputLimit(s.OutputByteLimit, m.opts.MaxOutputBytes)},
	}
	started := make(chan error, 1)
	proc.Go(func() { m.supervise(t, s, started) }) // a confined start restricts a thread of its own
	if err := <-started; err != nil {
		return "", err
	}

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

// outputLimit is the smaller of the positive limits, 0 if neither is.
func outputLimit(asked, cap int) int {
	if cap > 0 && (asked <= 0 || asked > cap) {
		return cap
	}
	return asked
}

// reserve takes a slot for a new terminal and its supervisor's place in
// wg. At the cap, released terminals still ending are killed at once and
// waited for first.
func (m *Manager) reserve() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		if m.closed {
			return ErrClosed
		}
		if m.opts.MaxTerminals <= 0 || m.live < m.opts.MaxTerminals {
			m.live++
			m.wg.Add(1)
			return nil
		}
		if len(m.dying) == 0 {
			return fmt.Errorf("%w: %d terminals are live, the most allowed; release one first", ErrTooMany, m.live)
		}
		dying := make([]*term, 0, len(m.dying))
		for t := range m.dying {
			dying = append(dying, t)
		}
		m.mu.Unlock()
		for _, t := range dying {
			t.signal(true)
		}
		for _, t := range dying {
			<-t.done
		}
		m.mu.Lock()
	}
}

// finished gives t's slot back.
func (m *Manager) finished(t *term) {
	m.mu.Lock()
	m.live--
	delete(m.dying, t)
	m.mu.Unlock()
}

// newGroup returns the cgroup for a new command: nil and why where there
// is none (or none is asked for), an error where one is required.
func (m *Manager) newGroup() (*cgroup.Group, error, error) {
	if m.opts.Cgroup == CgroupOff {
		return nil, nil, nil
	}
	g, err := newCgroup("term-")
	if err == nil {
		return g, nil, nil
	}
	if m.opts.Cgroup == CgroupRequired {
		return nil, nil, fmt.Errorf("terminal: %w", err)
	}
	return nil, err, nil
}

// fallBack calls OnFallback for the first command of m held otherwise
// than by a cgroup under CgroupAuto (or a namespace under NamespaceAuto).
func (m *Manager) fallBack(namespaced bool, reasons []error) {
	if len(reasons) == 0 {
		return
	}
	m.mu.Lock()
	report := !m.fellBack && m.opts.OnFallback != nil
	m.fellBack = true
	m.mu.Unlock()
	if report {
		m.opts.OnFallback(namespaced, errors.Join(reasons...))
	}
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
	proc.SetGroup(cmd, m.opts.Confine)
	return cmd, nil
}

// start starts cmd with both stdout and stderr on one pipe, in g when
// set, else as PID 1 of a PID namespace when namespaced: the calling
// thread becomes the command's parent (its parent-death signal follows
// that thread). A confined command (writable non-nil) is started by
// proc.StartRestricted; namespaced, it has no parent-death signal, and a
// proc.DeathWatch kills it with the host instead.
func (t *term) start(cmd *exec.Cmd, g *cgroup.Group, namespaced bool, writable []string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	// The same *os.File for both: os/exec passes one descriptor as fd 1
	// and 2 and starts no copying goroutines.
	cmd.Stdout, cmd.Stderr = w, w
	if g != nil {
		g.Attach(cmd.SysProcAttr)
	} else if namespaced {
		proc.SetNamespace(cmd.SysProcAttr)
	}
	if writable != nil {
		err = proc.StartRestricted(cmd, writable)
	} else {
		err = cmd.Start()
	}
	w.Close() // the child has its own copy; EOF comes when every holder exits
	if err != nil {
		r.Close()
		return err
	}
	t.cmd, t.r, t.group = cmd, r, g
	if g == nil && namespaced && writable != nil {
		t.death = proc.WatchDeath(cmd.Process.Pid)
	}
	return nil
}

// restrict is what a command may write beneath when confined (never nil
// then), nil when it is not.
func (m *Manager) restrict() []string {
	if !m.opts.Confine {
		return nil
	}
	return append([]string{}, m.opts.Writable...)
}

// launch starts s for t on the calling thread, confined first if asked:
// in a cgroup if one can be had, else in a PID namespace if asked for and
// possible, else with its process group only. A start that fails in a
// cgroup (the kernel refused the move: no internal processes, a threaded
// group, permissions) or a namespace is tried the next way unless that
// one is required.
func (m *Manager) launch(t *term, s Spec) error {
	var g *cgroup.Group
	var reason, err error
	offThread(func() { g, reason, err = m.newGroup() })
	if err != nil {
		return err
	}
	var reasons []error
	if reason != nil {
		reasons = append(reasons, reason)
	}
	cmd, err := m.command(s)
	if err != nil {
		removeGroup(g, time.Second)
		return err
	}
	if g != nil {
		err = t.start(cmd, g, false, m.restrict())
		if err == nil {
			return nil
		}
		removeGroup(g, time.Second)
		if m.opts.Cgroup == CgroupRequired {
			return err
		}
		reasons = append(reasons, fmt.Errorf("%w: starting in a cgroup: %v", cgroup.ErrUnavailable, err))
		if cmd, err = m.command(s); err != nil {
			return err
		}
	}
	if m.opts.Namespace != NamespaceOff {
		nerr := proc.NamespaceAvailable()
		if nerr == nil {
			serr := t.start(cmd, nil, true, m.restrict())
			if serr == nil {
				m.fallBack(true, reasons)
				return nil
			}
			nerr = fmt.Errorf("%w: starting in one: %v", proc.ErrNoNamespace, serr)
			if cmd, err = m.command(s); err != nil {
				return err
			}
		}
		if m.opts.Namespace == NamespaceRequired {
			return fmt.Errorf("terminal: %w", nerr)
		}
		reasons = append(reasons, nerr)
	}
	if err := t.start(cmd, nil, false, m.restrict()); err != nil {
		return err
	}
	m.fallBack(false, reasons)
	return nil
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

// supervise starts the command (reporting to started), waits for it to
// exit, bounds the wait for its output, reaps it, empties and removes its
// cgroup, and publishes its exit status. It is the only goroutine that
// reaps the process, and its OS thread, the command's parent, stays
// locked until then: on Linux the command's parent-death signal follows
// that thread (see proc.Go; a confined command has none: it is started by
// proc.StartRestricted from a thread that ends first).
func (m *Manager) supervise(t *term, s Spec, started chan<- error) {
	defer m.wg.Done()
	defer m.finished(t)
	if err := m.launch(t, s); err != nil {
		close(t.done)
		started <- fmt.Errorf("terminal: start %q: %w", s.Command, err)
		return
	}
	m.wg.Add(1) // the reader; this goroutine's count is held
	go m.read(t)
	started <- nil

	// Where possible, learn about the exit without reaping: the zombie
	// keeps the pid, and so the process-group id, from being reused, which
	// makes signalling the group safe until reaped is set below.
	held := proc.WaitExited(t.cmd.Process) == nil
	if held {
		close(t.exited)
		m.awaitDrain(t)
		t.signal(true) // whatever the command left in its group and cgroup
	}
	if held {
		t.death.Stop() // a zombie: its pid is still its own
	}
	t.mu.Lock()
	t.reaped = true
	t.mu.Unlock()
	_ = t.cmd.Wait() // non-zero exits are in ProcessState
	t.death.Stop()
	if !held {
		close(t.exited)
	}
	removeGroup(t.group, removeTimeout) // a process in uninterruptible sleep may outlast it
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
// process may already have been reaped; SIGKILL also to its whole cgroup.
func (t *term) signal(hard bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.reaped {
		_ = signalGroup(t.cmd.Process, hard)
	}
	if hard && t.group != nil {
		offThread(func() { _ = t.group.Kill() })
	}
}

// signalGroup sends SIGKILL (hard) or SIGTERM to p's process group; where
// there are no groups, both kill p itself. The caller must know that p has
// not been reaped.
func signalGroup(p *os.Process, hard bool) error {
	if !hard {
		if err := proc.SignalGroup(p, syscall.SIGTERM); !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	return proc.SignalGroup(p, syscall.SIGKILL)
}

// offThread runs f on another goroutine and waits for it: the cgroup file
// system is written from a thread a confined supervisor has not
// restricted (package confine: the restriction stays on the locked
// thread).
func offThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// removeGroup removes g (if any) off the calling thread.
func removeGroup(g *cgroup.Group, timeout time.Duration) {
	if g != nil {
		offThread(func() { _ = g.Remove(timeout) })
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

// markDying counts t, released, among those reserve may hurry; m.mu is
// held.
func (m *Manager) markDying(t *term) {
	if t == nil {
		return
	}
	select {
	case <-t.done:
	default:
		m.dying[t] = struct{}{}
	}
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
	m.markDying(t)
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
			m.markDying(t)
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

// newCgroup is cgroup.New; tests make it fail to exercise the fallback.
var newCgroup = cgroup.New
