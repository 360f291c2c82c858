package acphost

import (
	"context"
	"errors"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acphost/acphost/internal/confine"
	"github.com/acphost/acphost/internal/fsview"
	"github.com/acphost/acphost/internal/proc"
	"github.com/acphost/acphost/internal/wire"
)

// processLink is the agent as a local subprocess (internal/proc): its
// own process group, parent-death signal, cgroup and confinement as
// ACPOptions ask.
type processLink struct {
	p            *proc.Process
	containment  Containment
	planConfined bool  // confined to Confinement.PlanWritable
	planView     bool  // in plan mode's private view of the file system
	noView       error // why not, when plan-confined without it
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
// PID namespace, see ACPOptions.Process.Contain) with all three pipes connected.
// Under Confine with plan (plan mode at this start), the agent may write
// only plan mode's directories (see Confinement.PlanWritable).
func startProcess(opts *ACPOptions, plan *planTemp) (*processLink, error) {
	env := opts.Process.Env
	if !opts.Process.CleanEnv {
		env = append(os.Environ(), opts.Process.Env...)
	}
	s := proc.Spec{Command: opts.Command, Args: opts.Args, Env: env, Dir: opts.Dir,
		GroupRequired: opts.Process.Contain == ContainCgroup, NamespaceRequired: opts.Process.Contain == ContainPIDNamespace, Log: opts.Debug.Logger}
	planConfined := false
	if opts.Process.Confine != nil && (plan != nil || !opts.Process.Confine.PlanOnly) {
		s.Confined, s.Writable = true, opts.Process.Confine.Writable
		if plan != nil {
			tmp, err := plan.get()
			if err != nil {
				return nil, err
			}
			s.Env = append(slices.Clip(env), "TMPDIR="+tmp)
			s.Writable, planConfined = planConfinement(opts.Process.Confine, startProfile(opts), opts.Command, env, opts.Dir, tmp), true
			if !opts.Process.Confine.NoPlanView {
				if s.View, err = planView(opts, s.Env, tmp, s.Writable); err != nil {
					return nil, err
				}
			}
		}
	}
	p, held, err := startContained(opts, s)
	var noView error
	if errors.Is(err, fsview.ErrUnavailable) {
		noView = err
		if opts.Debug.Logger != nil {
			opts.Debug.Logger.Warn("acphost: plan mode runs the agent without its private view of the file system", "err", err)
		}
		s.View = nil
		p, held, err = startContained(opts, s)
	}
	if err != nil {
		return nil, err
	}
	return &processLink{p: p, containment: containmentOf(opts.Process.Contain, p, held.reasons, opts.Debug.Logger),
		planConfined: planConfined, planView: planConfined && s.View != nil, noView: noView}, nil
}

// startContained starts s in the containment opts ask for.
func startContained(opts *ACPOptions, s proc.Spec) (*proc.Process, containPlan, error) {
	held, err := newContainment(opts.Process.Contain, startProfile(opts).namespaceRefused())
	if err != nil {
		return nil, held, err
	}
	s.Group, s.Namespace = held.group, held.namespace
	p, err := proc.Start(s)
	if errors.Is(err, proc.ErrNoNamespace) {
		return nil, held, containError(err)
	}
	return p, held, err
}

// planView is the private view of the file system an agent started in
// plan mode runs in (Confinement.NoPlanView): its working directory, the
// fs roots and PlanReadOnly read-only; its homes and the temporary
// directories copy-on-write; writable, the directories plan mode lets it
// write for real. The scratch memory is mounted on a directory in tmp. An
// error is the host's (no scratch directory): the start fails rather than
// run without the view.
func planView(opts *ACPOptions, env []string, tmp string, writable []string) (*fsview.View, error) {
	scratch, err := viewScratch(tmp)
	if err != nil {
		return nil, err
	}
	v := &fsview.View{Dir: opts.Dir, Writable: writable, Scratch: scratch, ScratchBytes: opts.Process.Confine.PlanViewBytes}
	if v.Dir == "" {
		v.Dir, _ = os.Getwd()
	}
	v.ReadOnly = append([]string{v.Dir}, opts.Process.Confine.PlanReadOnly...)
	if opts.FS != nil {
		v.ReadOnly = append(v.ReadOnly, opts.FS.AdditionalDirs...)
	}
	homes := []string{envValue(env, "HOME")}
	if h, err := os.UserHomeDir(); err == nil {
		homes = append(homes, h)
	}
	if u, err := user.Current(); err == nil {
		homes = append(homes, u.HomeDir)
	}
	// /run and the runtime directory too: a unix socket seen through an
	// overlay cannot be connected to, so the user's services there (the
	// session bus and systemd --user, which start processes outside the
	// agent's confinement; ssh and gpg agents; container engines) are out
	// of its reach, as are those in the homes and /tmp (a chat's control
	// socket, tmux).
	places := append(homes, os.TempDir(), "/tmp", "/var/tmp", "/dev/shm", "/run", envValue(env, "XDG_RUNTIME_DIR"))
	for _, d := range places {
		if d != "" && filepath.IsAbs(d) && filepath.Clean(d) != "/" {
			v.Overlay = append(v.Overlay, confine.Resolve(d))
		}
	}
	for i, d := range v.ReadOnly {
		v.ReadOnly[i] = confine.Resolve(d)
	}
	return v, nil
}

// viewScratch is the directory in tmp the view's memory is mounted on. An
// agent that ran without the view (plan mode off, before the switch) could
// write tmp: whatever it left at that name that is not a directory (a file,
// a link to /proc or to the project) is removed first, never followed; one
// put back in between makes fsview.Start fail, not fall back.
func viewScratch(tmp string) (string, error) {
	scratch := filepath.Join(tmp, ".view")
	if st, err := os.Lstat(scratch); err == nil && !st.IsDir() {
		if err := os.Remove(scratch); err != nil {
			return "", err
		}
	}
	if err := os.Mkdir(scratch, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return scratch, nil
}

// envValue is the value env gives key (the last one wins, as in exec), ""
// for none.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
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
	exit, stderr, err := l.p.Outcome()
	e := &ExitError{ExitCode: exit.Code, Stderr: stderr, DuringTurn: duringTurn, Err: err}
	if l.planConfined {
		e.PlanKernel = l.kernelWords()
	}
	if exit.Signaled {
		e.Signal = exit.Signal.String()
	}
	return e
}

// kernelWords says, for an error, what plan mode's kernel layer let the
// agent write.
func (l *processLink) kernelWords() string {
	if l.planView {
		return "it ran under plan mode's kernel layer: its working directory and the fs roots read-only, " +
			"its homes and the temporary directories private copies, its state directories writable; " +
			"anything else it must write: Confinement.PlanWritable (acphost --writable DIR)"
	}
	return "it ran under plan mode's kernel layer, which lets it write only its state directories and TMPDIR " +
		"(no private view of the file system: " + l.viewReason() + "); " +
		"anything else it must write: Confinement.PlanWritable (acphost --writable DIR)"
}

// viewReason says why a plan-confined agent runs without its private
// view, "" when it has it or is not plan-confined.
func (l *processLink) viewReason() string {
	switch {
	case !l.planConfined || l.planView:
		return ""
	case l.noView == nil:
		return "Confinement.NoPlanView is set"
	}
	return l.noView.Error()
}
