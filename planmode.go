package acphost

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/acphost/acphost/acp"
)

// Plan mode holds in layers (SPEC.md, Plan mode): the host rejects every
// asked change and refuses fs writes and terminals (permission.go, fs.go,
// terminal.go); each session is put in the agent's own restrictive mode
// (syncMode); a change the agent reports having made anyway stops the turn
// (checkChange); and with ACPOptions.Process.Confine the kernel keeps the agent's
// process tree from writing anywhere but its own state (planConfinement).

// Enforcement says which of the host's promises about changes hold for a
// session, layer by layer, so that a UI can say the truth rather than what
// was asked for. See Session.Enforcement.
type Enforcement struct {
	// PlanMode: the client's plan mode is on. Its host layer then always
	// holds: every permission request whose tool can change something is
	// rejected, fs writes and terminal commands are refused.
	PlanMode bool
	// Profile names the agent profile in use ("" when none was given or
	// recognised).
	Profile string
	// Mode is the session's current mode ("" when the agent offers none),
	// and ModeKind what it does about changes.
	Mode     string
	ModeKind ModeKind
	// PlanModeID is the mode plan mode puts the session in before each
	// prompt: the agent's own restrictive mode, else one that asks (whose
	// asks the host rejects); "" when the agent offers neither.
	PlanModeID string
	// AgentMode: plan mode is on and the session is in PlanModeID.
	AgentMode bool
	// RestoreMode is the mode the session is put back in when plan mode
	// goes off: the mode plan mode found it in, or the one SetMode (or
	// SessionOptions.Mode) asked for while plan mode held it; "" when
	// plan mode has not switched the session.
	RestoreMode string
	// AskingModes are the modes the agent offers that ask before a
	// change, best first: the first maxNamedModes (8), each id cut to 64
	// bytes, for a report (the agent may offer thousands).
	AskingModes []string
	// Kernel: the agent process runs under plan mode's read-only
	// confinement (Confinement.PlanWritable), which holds even for a
	// change the agent never reports.
	Kernel bool
	// KernelReason says why not, when PlanMode is on and Kernel is not.
	KernelReason string
	// View: under the kernel layer the agent runs in its private view of
	// the file system (Confinement.NoPlanView), where the project is
	// read-only and its homes and temporary directories are copies that end
	// with it, so it runs however it was launched. ViewReason says why not,
	// when Kernel is on and View is not (Landlock alone then lets it write
	// only its state directories, TMPDIR and PlanWritable).
	View       bool
	ViewReason string
	// Detection: a change the agent reports having made without the host's
	// consent stops the turn (in plan mode, and with RequireAsking).
	Detection bool
	// Unasked counts the changes the agent reported making without asking
	// in this session (stopped or not).
	Unasked int
	// ActsUnasked: the agent does not ask before every change, known from
	// its mode (ModeUnasked) or seen (Unasked > 0). A policy that rejects
	// or asks then decides only what the agent chooses to ask.
	ActsUnasked bool
}

// OwnMode is the session's mode apart from plan mode: RestoreMode when plan
// mode switched the session, else Mode. A host that records a session's
// mode to set it again when the session is continued records this one, so
// that a session continued outside plan mode is not left in the agent's
// plan mode.
func (e Enforcement) OwnMode() string {
	if e.RestoreMode != "" {
		return e.RestoreMode
	}
	return e.Mode
}

// String sums the report up for a person, in one line: which layers hold
// plan mode, or, outside it, whether the agent acts without asking; ""
// when there is nothing to say. SafeText has made the agent's mode ids
// safe to show.
func (e Enforcement) String() string {
	if e.PlanMode {
		layers := []string{"host"}
		if e.AgentMode {
			layers = append(layers, "agent mode "+acp.SafeText(cutBytes(e.PlanModeID, maxModeBytes)))
			if e.ModeKind == ModeAsks {
				layers[len(layers)-1] += " (asks)"
			}
		}
		if e.Kernel && !e.View && e.ViewReason != "" {
			layers = append(layers, "kernel (Landlock only: "+e.ViewReason+")")
		} else if e.Kernel {
			layers = append(layers, "kernel")
		}
		s := "held by " + strings.Join(layers, ", ")
		if e.PlanModeID == "" {
			s += "; the agent offers no plan mode"
		}
		if !e.Kernel {
			s += "; not kernel-enforced: " + e.KernelReason
		}
		return s
	}
	if !e.ActsUnasked {
		return ""
	}
	s := "but the agent acts without asking"
	if e.Mode != "" && e.ModeKind == ModeUnasked {
		s = "but mode " + acp.SafeText(cutBytes(e.Mode, maxModeBytes)) + " acts without asking"
	}
	if len(e.AskingModes) > 0 {
		s += "; modes that ask: " + acp.SafeText(strings.Join(e.AskingModes, ", "))
	}
	return s
}

// modeOffer is what a session offers to set its mode with: its ACP modes,
// then the choices of its config option of category "mode" that are not
// among them (opencode offers only those).
type modeOffer struct {
	modes    []acp.SessionMode
	acp      int    // modes[:acp] are ACP modes, set with session/set_mode
	configID string // the mode config option, "" none
}

func (o modeOffer) mode(id string) acp.SessionMode {
	for _, m := range o.modes {
		if m.ID == id {
			return m
		}
	}
	return acp.SessionMode{ID: id}
}

func (o modeOffer) offers(id string) bool {
	return slices.ContainsFunc(o.modes, func(m acp.SessionMode) bool { return m.ID == id })
}

func (o modeOffer) viaACP(id string) bool {
	return slices.ContainsFunc(o.modes[:o.acp], func(m acp.SessionMode) bool { return m.ID == id })
}

func hasOption(opts []acp.ConfigOption, id string) bool {
	return slices.ContainsFunc(opts, func(o acp.ConfigOption) bool { return o.ID == id })
}

// optionValue is the current value of config option id among opts, ""
// when it has none.
func optionValue(opts []acp.ConfigOption, id string) string {
	for i := range opts {
		if opts[i].ID == id {
			return opts[i].Current()
		}
	}
	return ""
}

// changes reports whether a tool call changes something: an edit, delete,
// move or command, or any call with a diff in its content.
func changes(tc *acp.ToolCall) bool {
	switch tc.Kind {
	case acp.ToolEdit, acp.ToolDelete, acp.ToolMove, acp.ToolExecute:
		return true
	}
	return tc.HasDiff()
}

// maxNamedModes bounds the modes an UnaskedChangeError or an Enforcement
// names, maxModeBytes the bytes of each id it shows.
const (
	maxNamedModes = 8
	maxModeBytes  = 64
)

// namedModes cuts ids (maxNamedModes at most) to maxModeBytes each, in
// place, for a report.
func namedModes(ids []string) []string {
	for i := range ids {
		ids[i] = cutBytes(ids[i], maxModeBytes)
	}
	return ids
}

// planConfinement is what an agent started in plan mode in project may
// write: its profile's state directories outside the project (made if
// missing), its private temporary directory tmp, and
// Confinement.PlanWritable.
func planConfinement(c *Confinement, p *AgentProfile, launcher string, env []string, project, tmp string) []string {
	out := []string{tmp}
	dirs := p.stateDirsOutside(env, project)
	if l := launcherProfile(launcher); l != nil {
		dirs = append(dirs, l.stateDirsOutside(env, project)...)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err == nil || errors.Is(err, os.ErrExist) {
			out = append(out, d)
		}
	}
	return append(out, c.PlanWritable...)
}

// launcherProfile names the caches of the program that fetches and starts
// the agent (npx, uvx: "npx -y @agentclientprotocol/claude-agent-acp"),
// which it writes before the agent runs; nil for any other command.
func launcherProfile(command string) *AgentProfile {
	switch filepath.Base(command) {
	case "npx", "npm":
		return &AgentProfile{Name: "npx", StateDirs: []string{"$npm_config_cache", "~/.npm"}}
	case "uvx", "uv":
		return &AgentProfile{Name: "uvx", StateDirs: []string{"$UV_CACHE_DIR", "$XDG_CACHE_HOME/uv", "~/.cache/uv"}}
	}
	return nil
}

// planTemp is the private temporary directory (TMPDIR) of the agents a
// client starts in plan mode under Confine, where they may write: not the
// shared one, which may hold the project. Made at the first such start,
// removed at Close.
type planTemp struct {
	mu  sync.Mutex
	dir string
}

func (p *planTemp) get() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dir == "" {
		dir, err := os.MkdirTemp("", "acphost-plan-")
		if err != nil {
			return "", err
		}
		p.dir = dir
	}
	return p.dir, nil
}

func (p *planTemp) remove() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dir != "" {
		_ = os.RemoveAll(p.dir) // removes links, never follows them
		p.dir = ""
	}
}
