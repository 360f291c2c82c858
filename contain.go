package acphost

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/acphost/acphost/internal/cgroup"
	"github.com/acphost/acphost/internal/terminal"
)

// ContainMode chooses how a client holds the processes it starts (the
// agent and everything it runs, and each command of TerminalOptions) so
// that Close leaves none of them behind.
type ContainMode string

const (
	// ContainAuto, the zero value, uses a cgroup where the system allows it
	// and otherwise the process group, which a Logger warning and
	// Containment report.
	ContainAuto ContainMode = ""
	// ContainCgroup requires a Linux cgroup v2 group per process tree: the
	// agent's, and one per terminal. Close (and terminal/kill, release)
	// kills every process in it, however it detached: a new session or
	// process group, a double fork. Where no such group can be had, Start
	// fails, and so does terminal/create, with an error matching
	// ErrUnsupported.
	ContainCgroup ContainMode = "cgroup"
	// ContainProcessGroup holds the agent by its process group (and
	// parent-death signal) only: a process that leaves the group
	// (setsid, a daemon) outlives Close.
	ContainProcessGroup ContainMode = "process-group"
)

// Containment is how a client's agent process is held.
type Containment struct {
	// Mode is ContainCgroup or ContainProcessGroup; "" for a Connect
	// client, whose agent is no process of ours.
	Mode ContainMode
	// Cgroup is the agent's cgroup directory when Mode is ContainCgroup.
	Cgroup string
	// Reason says why Mode is not ContainCgroup; it matches ErrUnsupported.
	Reason error
}

// newCgroup is cgroup.New; tests make it fail to exercise the fallback.
var newCgroup = cgroup.New

var errContainOff = fmt.Errorf("acphost: ACPOptions.Contain is %q (%w)", ContainProcessGroup, ErrUnsupported)

// checkContain rejects a mode that is none of the constants.
func checkContain(o *ACPOptions) error {
	switch o.Contain {
	case ContainAuto, ContainCgroup, ContainProcessGroup:
		return nil
	}
	return fmt.Errorf("acphost: unknown ACPOptions.Contain %q", o.Contain)
}

// newContainment makes the cgroup for the agent as mode asks: nil and why
// where there is none and the mode allows that (with a warning), an error
// wrapping ErrUnsupported where it does not.
func newContainment(mode ContainMode, log *slog.Logger) (*cgroup.Group, Containment, error) {
	if mode == ContainProcessGroup {
		return nil, Containment{Mode: ContainProcessGroup, Reason: errContainOff}, nil
	}
	g, err := newCgroup("agent-")
	if err == nil {
		return g, Containment{Mode: ContainCgroup, Cgroup: g.Path()}, nil
	}
	if ferr := containFallback(mode, err, log); ferr != nil {
		return nil, Containment{}, ferr
	}
	return nil, fallbackContainment(err), nil
}

// containFallback returns the error for a cgroup not had, or nil after a
// warning where ContainAuto allows the process group.
func containFallback(mode ContainMode, err error, log *slog.Logger) error {
	err = fmt.Errorf("acphost: containment: %w (%w)", err, ErrUnsupported)
	if mode == ContainCgroup {
		return err
	}
	log.Warn("acphost: processes are held by their process group only; one that leaves it (setsid, a daemon) outlives Close", "reason", err)
	return nil
}

// fallbackContainment is the report for the agent held by its process
// group because of err.
func fallbackContainment(err error) Containment {
	if !errors.Is(err, ErrUnsupported) {
		err = fmt.Errorf("acphost: containment: %w (%w)", err, ErrUnsupported)
	}
	return Containment{Mode: ContainProcessGroup, Reason: err}
}

// terminalCgroups maps the mode onto the terminal package's, with a
// warning for each client whose terminals fall back.
func terminalCgroups(o *ACPOptions, t *terminal.Options) {
	switch o.Contain {
	case ContainCgroup:
		t.Cgroup = terminal.CgroupRequired
	case ContainProcessGroup:
		t.Cgroup = terminal.CgroupOff
	default:
		log := o.Logger
		t.OnFallback = func(err error) { _ = containFallback(ContainAuto, err, log) }
	}
}
