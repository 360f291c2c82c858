package acphost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/acphost/acphost/internal/cgroup"
	"github.com/acphost/acphost/internal/proc"
	"github.com/acphost/acphost/internal/terminal"
)

// ContainMode chooses how a client holds the processes it starts (the
// agent and everything it runs, and each command of TerminalOptions) so
// that Close leaves none of them behind.
type ContainMode string

const (
	// ContainAuto, the zero value, uses the first of these the system
	// allows: a cgroup (ContainCgroup), a PID namespace
	// (ContainPIDNamespace), the process group (ContainProcessGroup). Each
	// step down is reported by Containment, and by a Logger warning the
	// first time in the process (at debug level after).
	ContainAuto ContainMode = ""
	// ContainCgroup requires a Linux cgroup v2 group per process tree: the
	// agent's, and one per terminal. Close (and terminal/kill, release)
	// kills every process in it, however it detached: a new session or
	// process group, a double fork. Where no such group can be had, Start
	// fails, and so does terminal/create, with an error matching
	// ErrUnsupported.
	ContainCgroup ContainMode = "cgroup"
	// ContainPIDNamespace requires a Linux PID namespace per process tree,
	// made through an unprivileged user namespace that maps the user's own
	// uid and gid to themselves (the agent keeps its identity; with
	// CAP_SYS_ADMIN no user namespace is made). The agent, and each
	// terminal's command, is PID 1 of its namespace: when it dies (Close,
	// the stop ladder, the host's death) the kernel kills every process
	// left in the namespace, however it detached, and none of them can
	// name a process outside to signal it. Where user namespaces are
	// refused (a sysctl, an AppArmor rule), Start fails, and so does
	// terminal/create, with an error matching ErrUnsupported that says why.
	// See SPEC.md (Process lifecycle, known limits) for what a namespace's
	// PID 1 does otherwise (SIGTERM, setuid programs).
	ContainPIDNamespace ContainMode = "pid-namespace"
	// ContainProcessGroup holds the agent by its process group (and
	// parent-death signal) only: a process that leaves the group
	// (setsid, a daemon) outlives Close.
	ContainProcessGroup ContainMode = "process-group"
	// ContainPod is reported, never asked for: the agent runs in a
	// Kubernetes pod of its own (package kube), its whole tree inside it
	// and deleted with it. Containment.Facts says how the pod confines it.
	ContainPod ContainMode = "pod"
)

// Containment is how a client's agent process is held.
type Containment struct {
	// Mode is ContainCgroup, ContainPIDNamespace or ContainProcessGroup;
	// "" for a StreamTransport client, whose agent is no process of ours.
	Mode ContainMode
	// Cgroup is the agent's cgroup directory when Mode is ContainCgroup.
	Cgroup string
	// Reason says why Mode is not ContainCgroup (and, for
	// ContainProcessGroup, not ContainPIDNamespace either); it matches
	// ErrUnsupported.
	Reason error
	// Where, for an agent its transport placed (a ContainedLink), names
	// the place: "pod NAME in NAMESPACE".
	Where string
	// Facts, for an agent its transport placed, are what confine it
	// there, each a few words: "non-root (uid 65532)", "no capabilities",
	// "read-only root file system", "no service-account token".
	Facts []string
}

// A ContainedLink is a Link whose agent is contained where it runs — a
// pod's security context, not this host's processes — and can say how.
// The client's Containment reports it.
type ContainedLink interface {
	Link
	// Containment says how the agent is contained. It is called after
	// Dial returned, from any goroutine.
	Containment() Containment
}

// Word is the containment in one word, for a header: "cgroup",
// "namespace", "group", "pod" (or a transport's own word), or "" for no
// process of ours.
func (c Containment) Word() string {
	switch c.Mode {
	case ContainCgroup:
		return "cgroup"
	case ContainPIDNamespace:
		return "namespace"
	case ContainProcessGroup:
		return "group"
	}
	return string(c.Mode)
}

// newCgroup is cgroup.New and namespaceAvailable proc.NamespaceAvailable;
// tests make them fail to exercise the fallbacks.
var (
	newCgroup          = cgroup.New
	namespaceAvailable = proc.NamespaceAvailable
)

var errContainOff = fmt.Errorf("acphost: ACPOptions.Process.Contain is %q (%w)", ContainProcessGroup, ErrUnsupported)

// checkContain rejects a mode that is none of the constants.
func checkContain(o *ACPOptions) error {
	switch o.Process.Contain {
	case ContainAuto, ContainCgroup, ContainPIDNamespace, ContainProcessGroup:
		return nil
	}
	return fmt.Errorf("acphost: unknown ACPOptions.Process.Contain %q", o.Process.Contain)
}

// containPlan is what the agent's start is to try: the cgroup (nil for
// none), then a PID namespace, then the process group; and why the steps
// not tried were not.
type containPlan struct {
	group     *cgroup.Group
	namespace bool
	reasons   []error // why a cgroup, or a namespace, cannot be had
}

// newContainment plans the agent's containment as mode asks: an error
// wrapping ErrUnsupported where the mode requires what cannot be had.
// avoid, if set, is why ContainAuto must not use a PID namespace for this
// agent (its profile's NoPIDNamespace).
func newContainment(mode ContainMode, avoid error) (containPlan, error) {
	var plan containPlan
	switch mode {
	case ContainProcessGroup:
		plan.reasons = []error{errContainOff}
		return plan, nil
	case ContainPIDNamespace:
		if err := namespaceAvailable(); err != nil {
			return plan, containError(err)
		}
		plan.namespace = true
		plan.reasons = []error{fmt.Errorf("acphost: ACPOptions.Process.Contain is %q (%w)", ContainPIDNamespace, ErrUnsupported)}
		return plan, nil
	}
	g, err := newCgroup("agent-")
	if err != nil && mode == ContainCgroup {
		return plan, containError(err)
	}
	plan.group = g
	if mode == ContainCgroup {
		return plan, nil
	}
	if err != nil {
		plan.reasons = append(plan.reasons, err)
	}
	// Also with a cgroup: its start may be refused, and then tried so.
	nerr := namespaceAvailable()
	if nerr == nil && avoid != nil {
		nerr = avoid
	}
	if nerr == nil {
		plan.namespace = true
	} else if err != nil {
		plan.reasons = append(plan.reasons, nerr)
	}
	return plan, nil
}

// containError is a containment that cannot be had, matching
// ErrUnsupported.
func containError(err error) error {
	if errors.Is(err, ErrUnsupported) {
		return fmt.Errorf("acphost: containment: %w", err)
	}
	return fmt.Errorf("acphost: containment: %w (%w)", err, ErrUnsupported)
}

// containmentOf reports how p is held, given why the plan's first steps
// were not possible (reasons) and why its start stepped down (p.Fallback),
// warning for each step down under ContainAuto.
func containmentOf(mode ContainMode, p *proc.Process, reasons []error, log *slog.Logger) Containment {
	if fb := p.Fallback(); fb != nil {
		reasons = append(reasons, fb)
	}
	var c Containment
	switch {
	case p.Cgroup() != "":
		return Containment{Mode: ContainCgroup, Cgroup: p.Cgroup()}
	case p.Namespaced():
		c.Mode = ContainPIDNamespace
	default:
		c.Mode = ContainProcessGroup
	}
	c.Reason = containError(errors.Join(reasons...))
	if mode == ContainAuto {
		warnFallback(c.Mode, c.Reason, log)
	}
	return c
}

// fallbackWarned records the step-downs already warned of in this
// process: a host that starts agents all day where cgroups cannot be had
// (a container, a machine without systemd) would otherwise log the same
// warning at every start and restart.
var fallbackWarned fallbackWarnings

// fallbackWarnings says, per mode, whether its step-down was warned of.
type fallbackWarnings struct{ namespace, group atomic.Bool }

// level is Warn the first time mode is stepped down to, Debug after.
func (w *fallbackWarnings) level(mode ContainMode) slog.Level {
	done := &w.group
	if mode == ContainPIDNamespace {
		done = &w.namespace
	}
	if done.Swap(true) {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// warnFallback logs that processes are held by mode, not a cgroup: a
// warning the first time in the process, at debug level after (the
// client's Containment says it every time).
func warnFallback(mode ContainMode, reason error, log *slog.Logger) {
	fallbackWarned.log(mode, reason, log)
}

func (w *fallbackWarnings) log(mode ContainMode, reason error, log *slog.Logger) {
	if !log.Enabled(context.Background(), slog.LevelWarn) {
		return // a logger that drops it does not use up the warning
	}
	level := w.level(mode)
	if mode == ContainPIDNamespace {
		log.Log(context.Background(), level, "acphost: no cgroup: processes are held by a PID namespace of their own (each tree dies with its first process; setuid programs do not work in it)", "reason", reason)
		return
	}
	log.Log(context.Background(), level, "acphost: processes are held by their process group only; one that leaves it (setsid, a daemon) outlives Close", "reason", reason)
}

// terminalContain maps the mode onto the terminal package's, with a
// warning for each client whose terminals step down.
func terminalContain(o *ACPOptions, t *terminal.Options) {
	switch o.Process.Contain {
	case ContainCgroup:
		t.Cgroup = terminal.CgroupRequired
	case ContainPIDNamespace:
		t.Cgroup, t.Namespace = terminal.CgroupOff, terminal.NamespaceRequired
	case ContainProcessGroup:
		t.Cgroup = terminal.CgroupOff
	default:
		log := o.Debug.Logger
		t.Namespace = terminal.NamespaceAuto
		t.OnFallback = func(namespaced bool, err error) {
			mode := ContainProcessGroup
			if namespaced {
				mode = ContainPIDNamespace
			}
			warnFallback(mode, containError(err), log)
		}
	}
}
