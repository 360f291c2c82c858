// Package container runs an agent inside a container or a Kubernetes pod
// through the engine's own CLI — podman, docker or kubectl, the tools
// their users already have — as an acphost.Transport.
//
//	t := &container.Transport{Engine: "podman", Container: "devbox",
//		Command: "npx", Args: []string{"-y", "@agentclientprotocol/claude-agent-acp"}}
//	c, err := acphost.Start(ctx, acphost.ACPOptions{Transport: t, Dir: "/work"})
//
// Each Dial runs "ENGINE exec -i" (never a TTY: stderr stays apart and
// nothing is echoed or CRLF-mangled) into the Container, or with Run
// "ENGINE run -i --rm" of a container of its own, which Stop removes.
// Beside the agent, a second exec runs the same watchdog as over SSH: the
// agent's environment carries a random mark, and when the watchdog's
// stdin ends — the host stopped the agent, or the engine's client died
// with the host (both clients are local processes that get the
// parent-death signal; the engines close the exec'd processes' stdin then
// but leave them running) — every process carrying the mark in the
// container is sent SIGTERM, and SIGKILL two seconds later. The container
// needs sh, /proc, tr, grep, sleep and kill.
//
// The CLIs are used rather than the engines' Go clients: they are what
// is installed and configured (contexts, sockets, kubeconfig, auth) where
// the containers are, and they bring no dependency into the library.
package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/proc"
	"github.com/acphost/acphost/internal/remote"
)

// Transport runs an agent in a container. Its fields are read at each
// Dial; do not change them while a client uses it.
type Transport struct {
	// Engine is the CLI: "podman", "docker" (the default) or "kubectl",
	// or a path to one of them (its base name decides the syntax).
	Engine string
	// EngineArgs come right after the engine's name, before its
	// subcommand: "--context", "-n NAMESPACE", "--remote" ….
	EngineArgs []string
	// Container is the running container (a pod for kubectl) to exec
	// into. Exactly one of Container and Run is set.
	Container string
	// ExecArgs are options of "exec" (for kubectl "-c CONTAINER" of the
	// pod, for docker and podman "--user" …), before the container.
	ExecArgs []string
	// Run, instead of Container, starts a container of its own for each
	// agent: the arguments of "ENGINE run" that choose it — options, then
	// the image, e.g. ["--network", "none", "debian:12"], or with podman
	// ["--rootfs", "/:O"]. The transport adds -i, --rm and --name before
	// them and the command after them. Stop removes the container.
	// Not for kubectl.
	Run []string

	// Command and Args run the agent inside, after a prelude that sets Env.
	Command string
	Args    []string
	// Env is set for the agent ("KEY=value"). It travels on the exec's
	// stdin, so it shows neither in the host's process list nor in the
	// engine's records of the exec.
	Env []string
	// Dir is where the agent starts inside. Default: the container's
	// working directory.
	Dir string
}

// Dial starts the watchdog's exec, then the agent's. Failures to start
// are a *acphost.LinkError (Op "dial"); an engine that cannot find the
// container ends at once with its exit status and its message in the
// stderr tail.
func (t *Transport) Dial(ctx context.Context) (acphost.Link, error) {
	if err := t.check(); err != nil {
		return nil, dialError(err)
	}
	cmds, err := remote.NewCommands(append([]string{t.Command}, t.Args...), t.Env, t.Dir)
	if err != nil {
		return nil, dialError(err)
	}
	l := &link{engine: t.engine(), engineArgs: t.EngineArgs}
	argv := t.argv(cmds.Agent, &l.name)
	if l.name == "" { // exec into Container: the watchdog runs there too
		if l.watchdog, err = proc.Start(proc.Spec{Command: l.engine, Args: t.execArgv(cmds.Watchdog)[1:], Env: os.Environ()}); err != nil {
			return nil, dialError(err)
		}
		l.watchdog.Pump(&l.wg, nil) // its stderr: the engine's word when it fails
		// The agent starts only once its watchdog waits in the container:
		// an engine client killed before its exec ran would leave none.
		ready, cancel := context.WithTimeout(ctx, watchdogStart)
		err := remote.AwaitReady(ready, l.watchdog.Stdout())
		cancel()
		if err != nil {
			return nil, l.watchdogFailed(err)
		}
	}
	if l.p, err = proc.Start(proc.Spec{Command: argv[0], Args: argv[1:], Env: os.Environ()}); err != nil {
		l.stopWatchdog(0)
		return nil, dialError(err)
	}
	if _, err := l.p.Stdin().Write(cmds.Header); err != nil {
		l.Stop(0)
		return nil, dialError(err)
	}
	return l, nil
}

func dialError(err error) error {
	return &acphost.LinkError{Transport: "exec", Op: "dial", Err: err}
}

// watchdogStart bounds the wait for the watchdog's exec to run.
const watchdogStart = 30 * time.Second

func (t *Transport) engine() string {
	if t.Engine == "" {
		return "docker"
	}
	return t.Engine
}

func (t *Transport) check() error {
	switch {
	case t.Command == "":
		return errors.New("Transport.Command is empty")
	case (t.Container == "") == (len(t.Run) == 0):
		return errors.New("set exactly one of Transport.Container and Run")
	case strings.HasPrefix(t.Container, "-"):
		return fmt.Errorf("Transport.Container %q would be read as an option", t.Container)
	case len(t.Run) > 0 && kind(t.engine()) == "kubectl":
		return errors.New("Transport.Run starts a container with docker or podman; with kubectl, exec into a pod")
	}
	return nil
}

// argv is the engine's command line that runs inner: an exec into
// Container, or a run of a new container, whose name it sets.
func (t *Transport) argv(inner []string, name *string) []string {
	if len(t.Run) == 0 {
		return t.execArgv(inner)
	}
	*name = "acphost-" + randomHex(6)
	argv := append([]string{t.engine()}, t.EngineArgs...)
	argv = append(argv, "run", "-i", "--rm", "--name", *name)
	argv = append(argv, t.Run...)
	return append(argv, inner...)
}

// execArgv is the engine's command line that runs inner in Container.
func (t *Transport) execArgv(inner []string) []string {
	argv := append([]string{t.engine()}, t.EngineArgs...)
	argv = append(argv, "exec", "-i")
	argv = append(argv, t.ExecArgs...)
	argv = append(argv, t.Container)
	if kind(t.engine()) == "kubectl" {
		argv = append(argv, "--")
	}
	return append(argv, inner...)
}

// kind is the engine's base name, which decides its syntax.
func kind(engine string) string {
	return engine[strings.LastIndexByte(engine, '/')+1:]
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// link is the engine's client process carrying the agent's stdio, and
// for an exec the watchdog's.
type link struct {
	p          *proc.Process
	watchdog   *proc.Process // nil for Run: removing the container ends everything in it
	engine     string
	engineArgs []string
	name       string // the container Run created, removed by Stop
	stopOnce   sync.Once
	wg         sync.WaitGroup // the watchdog's stderr pump
}

func (l *link) Read(b []byte) (int, error)  { return l.p.Stdout().Read(b) }
func (l *link) Write(b []byte) (int, error) { return l.p.Stdin().Write(b) }
func (l *link) Stderr() io.Reader           { return l.p.Stderr() }
func (l *link) Done() <-chan struct{}       { return l.p.Exited() }

// Err is the exit of the engine's client: the agent's own status passed
// through (or the engine's, such as 125 or 126 for a missing container,
// with its message in the stderr tail).
func (l *link) Err() error {
	exit, err := l.p.Result() // its stderr is the client's to read: no tail to wait for
	e := &acphost.ExitError{ExitCode: exit.Code, Err: err}
	if exit.Signaled {
		e.Signal = exit.Signal.String()
	}
	return e
}

func (l *link) Promises() acphost.Promises {
	return acphost.Promises{Transport: "exec", Stderr: true, ExitStatus: true, GroupKill: true, Redial: true}
}

// Stop closes the agent's stdin (EOF) and waits up to grace for the
// engine's client to end, then ends the watchdog's stdin — every process
// of the agent's tree in the container gets SIGTERM, and SIGKILL two
// seconds later — and waits for it (bounded); then the clients' own
// process groups are stopped, and a container Run made is removed.
func (l *link) Stop(grace time.Duration) {
	l.stopOnce.Do(func() {
		l.p.Stdin().Close()
		l.p.WaitExit(grace)
		l.stopWatchdog(remote.WatchdogWait(grace))
		l.p.Stop(grace)
		if l.name != "" {
			l.remove()
		}
	})
}

// watchdogFailed stops the watchdog that did not get ready and says why:
// the engine's exit and message (no such container …) when it ended.
func (l *link) watchdogFailed(err error) error {
	ended := l.watchdog.WaitExit(5 * time.Second)
	l.stopWatchdog(0)
	if !ended {
		return dialError(err)
	}
	exit, tail, werr := l.watchdog.Outcome()
	return &acphost.ExitError{ExitCode: exit.Code, Stderr: tail, Err: errors.Join(err, werr)}
}

// stopWatchdog closes the watchdog's stdin and gives it up to d to finish.
func (l *link) stopWatchdog(d time.Duration) {
	if l.watchdog == nil {
		return
	}
	l.watchdog.Stdin().Close()
	l.watchdog.WaitExit(d)
	l.watchdog.Stop(0)
	l.wg.Wait()
}

// remove force-removes the container Run made, bounded: it may be gone.
func (l *link) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append(append([]string(nil), l.engineArgs...), "rm", "-f", "-t", "0", l.name)
	if kind(l.engine) == "docker" {
		args = append(append([]string(nil), l.engineArgs...), "rm", "-f", l.name)
	}
	_ = exec.CommandContext(ctx, l.engine, args...).Run()
}
