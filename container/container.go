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
// Inside, the agent runs under the same POSIX sh wrapper as over SSH: it
// holds the agent's process group and ends it (EOF, SIGTERM, SIGKILL)
// when the exec's stdin ends — when the host stops the agent, and when
// the engine client dies with the host (it is a local process that gets
// the parent-death signal), since the engines close the exec'd process's
// stdin then but leave it running. The container needs sh, setsid,
// mktemp, mkfifo, cat, sleep and kill.
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
	"io"
	"os"
	"os/exec"
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

	// Command and Args run the agent inside, under the wrapper.
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

// Dial starts the engine's client and the agent under the wrapper.
// Failures to start are a *acphost.LinkError (Op "dial"); an engine that
// cannot find the container ends at once with its exit status and its
// message in the stderr tail.
func (t *Transport) Dial(context.Context) (acphost.Link, error) {
	argv, name, err := t.argv()
	if err != nil {
		return nil, dialError(err)
	}
	header, err := remote.EnvHeader(t.Env)
	if err != nil {
		return nil, dialError(err)
	}
	p, err := proc.Start(proc.Spec{Command: argv[0], Args: argv[1:], Env: os.Environ()})
	if err != nil {
		return nil, dialError(err)
	}
	l := &link{p: p, engine: argv[0], engineArgs: t.EngineArgs, name: name}
	if _, err := p.Stdin().Write(header); err != nil {
		l.Stop(0)
		return nil, dialError(err)
	}
	return l, nil
}

func dialError(err error) error {
	return &acphost.LinkError{Transport: "exec", Op: "dial", Err: err}
}

// remoteGrace is the wrapper's grace between EOF, SIGTERM and SIGKILL.
const remoteGrace = 2 * time.Second

// argv is the engine's command line; name is the container Run created.
func (t *Transport) argv() (argv []string, name string, err error) {
	engine := t.Engine
	if engine == "" {
		engine = "docker"
	}
	if t.Command == "" {
		return nil, "", errors.New("Transport.Command is empty")
	}
	if (t.Container == "") == (len(t.Run) == 0) {
		return nil, "", errors.New("set exactly one of Transport.Container and Run")
	}
	inner := remote.Argv(append([]string{t.Command}, t.Args...), t.Dir, remoteGrace)
	argv = append([]string{engine}, t.EngineArgs...)
	kube := kind(engine) == "kubectl"
	switch {
	case len(t.Run) > 0 && kube:
		return nil, "", errors.New("Transport.Run starts a container with docker or podman; with kubectl, exec into a pod")
	case len(t.Run) > 0:
		name = "acphost-" + randomHex(6)
		argv = append(argv, "run", "-i", "--rm", "--name", name)
		argv = append(argv, t.Run...)
		return append(argv, inner...), name, nil
	case kube:
		argv = append(argv, "exec", "-i")
		argv = append(argv, t.ExecArgs...)
		argv = append(argv, t.Container, "--")
		return append(argv, inner...), "", nil
	default:
		argv = append(argv, "exec", "-i")
		argv = append(argv, t.ExecArgs...)
		argv = append(argv, t.Container)
		return append(argv, inner...), "", nil
	}
}

func kind(engine string) string {
	base := engine
	for i := len(engine) - 1; i >= 0; i-- {
		if engine[i] == '/' {
			base = engine[i+1:]
			break
		}
	}
	return base
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// link is the engine's client process, carrying the agent's stdio.
type link struct {
	p          *proc.Process
	engine     string
	engineArgs []string
	name       string // the container Run created, removed by Stop
	stopOnce   sync.Once
}

func (l *link) Read(b []byte) (int, error)  { return l.p.Stdout().Read(b) }
func (l *link) Write(b []byte) (int, error) { return l.p.Stdin().Write(b) }
func (l *link) Stderr() io.Reader           { return l.p.Stderr() }
func (l *link) Done() <-chan struct{}       { return l.p.Exited() }

// Err is the exit of the engine's client: the agent's own status passed
// through (or the engine's, such as 125 or 126 for a missing container,
// with its message in the stderr tail).
func (l *link) Err() error {
	exit, err, _ := l.p.Outcome()
	e := &acphost.ExitError{ExitCode: exit.Code, Err: err}
	if exit.Signaled {
		e.Signal = exit.Signal.String()
	}
	return e
}

func (l *link) Promises() acphost.Promises {
	return acphost.Promises{Transport: "exec", Stderr: true, ExitStatus: true, GroupKill: true, Redial: true}
}

// Stop closes the exec's stdin, so the wrapper inside ends the agent's
// group (EOF, then SIGTERM and SIGKILL two seconds apart); once the
// client has ended, or grace after the wrapper's ladder, the client's own
// process group is stopped; then a container Run made is removed.
func (l *link) Stop(grace time.Duration) {
	l.stopOnce.Do(func() {
		l.p.Stdin().Close()
		l.p.WaitExit(2*remoteGrace + grace)
		l.p.Stop(grace)
		if l.name != "" {
			l.remove()
		}
	})
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
