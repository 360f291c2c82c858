package acphost

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/acphost/acphost/internal/proc"
	"github.com/acphost/acphost/internal/wire"
)

// processLink is the agent as a local subprocess (internal/proc): its
// own process group, parent-death signal, cgroup and confinement as
// ACPOptions ask.
type processLink struct {
	p            *proc.Process
	containment  Containment
	planConfined bool // confined to Confinement.PlanWritable
}

// processDialer spawns a new agent process as opts say for every call,
// confined as plan mode is at that moment (see Confinement.PlanWritable).
func processDialer(opts *ACPOptions, planMode func() bool, tmp *planTemp) dialer {
	return func(context.Context) (link, error) {
		var plan *planTemp
		if planMode() {
			plan = tmp
		}
		l, err := startProcess(opts, plan)
		if err != nil {
			return nil, wrapOp("starting "+opts.Command, err)
		}
		return l, nil
	}
}

// startProcess spawns the agent in its own process group (and cgroup or
// PID namespace, see ACPOptions.Contain) with all three pipes connected.
// Under Confine with plan (plan mode at this start), the agent may write
// only plan mode's directories (see Confinement.PlanWritable).
func startProcess(opts *ACPOptions, plan *planTemp) (*processLink, error) {
	env := opts.Env
	if !opts.CleanEnv {
		env = append(os.Environ(), opts.Env...)
	}
	s := proc.Spec{Command: opts.Command, Args: opts.Args, Env: env, Dir: opts.Dir,
		GroupRequired: opts.Contain == ContainCgroup, NamespaceRequired: opts.Contain == ContainPIDNamespace, Log: opts.Logger}
	planConfined := false
	if opts.Confine != nil && (plan != nil || !opts.Confine.PlanOnly) {
		s.Confined, s.Writable = true, opts.Confine.Writable
		if plan != nil {
			tmp, err := plan.get()
			if err != nil {
				return nil, err
			}
			s.Env = append(slices.Clip(env), "TMPDIR="+tmp)
			s.Writable, planConfined = planConfinement(opts.Confine, startProfile(opts), opts.Command, env, opts.Dir, tmp), true
		}
	}
	held, err := newContainment(opts.Contain, startProfile(opts).namespaceRefused())
	if err != nil {
		return nil, err
	}
	s.Group, s.Namespace = held.group, held.namespace
	p, err := proc.Start(s)
	if errors.Is(err, proc.ErrNoNamespace) {
		return nil, containError(err)
	}
	if err != nil {
		return nil, err
	}
	return &processLink{p: p, containment: containmentOf(opts.Contain, p, held.reasons, opts.Logger), planConfined: planConfined}, nil
}

// connect frames lines over the agent's stdout and stdin: a pipe has a
// write deadline, which AbortWrites sets.
func (l *processLink) connect(opts wire.Options) *wire.Conn {
	return wire.NewConn(l.p.Stdout(), l.p.Stdin(), opts)
}

func (l *processLink) pump(wg *sync.WaitGroup, forward io.Writer) { l.p.Pump(wg, forward) }
func (l *processLink) stderrTail() string                         { return l.p.Tail() }
func (l *processLink) waitExit(d time.Duration) bool              { return l.p.WaitExit(d) }
func (l *processLink) stop(grace time.Duration)                   { l.p.Stop(grace) }

// watch runs ended when the process has exited: no goroutine waits for it
// meanwhile (quit is not needed: Stop always ends the process).
func (l *processLink) watch(wg *sync.WaitGroup, _ <-chan struct{}, ended func()) {
	wg.Add(1)
	l.p.OnExit(func() {
		defer wg.Done()
		ended()
	})
}

func (l *processLink) promises() Promises {
	return Promises{Transport: "process", Stderr: true, ExitStatus: true, GroupKill: proc.Groups, Redial: true, HostFiles: true}
}

func (l *processLink) end(duringTurn bool) error {
	exit, err, stderr := l.p.Outcome()
	e := &ExitError{ExitCode: exit.Code, Stderr: stderr, DuringTurn: duringTurn, Err: err}
	if exit.Signaled {
		e.Signal = exit.Signal.String()
	}
	return e
}
