package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/confine"
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

// enforcement is Session.Enforcement: which layers hold for s now.
func (s *Session) enforcement() Enforcement {
	a := s.c.agent()
	st := s.state()
	off := st.modeOffer()
	cur := st.effectiveMode()
	e := Enforcement{PlanMode: s.c.PlanMode(), Mode: cur, Unasked: int(s.unasked.Load())}
	if a.profile != nil {
		e.Profile = a.profile.Name
	}
	e.ModeKind = a.profile.kind(off.mode(cur))
	if cur == "" {
		e.ModeKind = ModeUnknown
	}
	e.PlanModeID = a.profile.planMode(off.modes)
	e.AgentMode = e.PlanMode && e.PlanModeID != "" && cur == e.PlanModeID
	s.mu.Lock()
	if s.planSwitched {
		e.RestoreMode = s.planFrom
	}
	s.mu.Unlock()
	e.AskingModes = namedModes(a.profile.askingModes(off.modes, maxNamedModes))
	e.Kernel = a.planKernel
	if e.PlanMode && !e.Kernel {
		e.KernelReason = s.c.kernelReason(a)
	}
	if e.Kernel {
		e.View, e.ViewReason = a.planView, a.noView
	}
	e.Detection = e.PlanMode || s.c.opts.RequireAsking
	e.ActsUnasked = e.ModeKind == ModeUnasked || e.Unasked > 0
	return e
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

// kernelReason says why the kernel layer does not hold for agent a.
func (c *ACPClient) kernelReason(a *agent) string {
	switch {
	case c.opts.Transport != nil || a.link.promises().Transport != "process":
		return "the agent is not a local process"
	case !CanConfine():
		return "Landlock is not available here"
	case c.opts.Process.Confine == nil:
		return "ACPOptions.Process.Confine is not set"
	case !a.planKernel && !c.canRestart(a):
		return "the agent was started outside plan mode and cannot be restarted under it: it re-attaches no session (session/load or resume) and its conversation would be lost"
	case !a.planKernel:
		return "the agent was started outside plan mode; it is restarted under it before the next turn"
	}
	return ""
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

func (s *sessionState) modeOffer() modeOffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := modeOffer{modes: slices.Clone(s.modeState.AvailableModes)}
	o.acp = len(o.modes)
	for i := range s.options {
		opt := &s.options[i]
		if opt.Category != acp.CategoryMode || len(opt.Choices) == 0 {
			continue
		}
		o.configID = opt.ID
		seen := make(map[string]bool, len(o.modes)+len(opt.Choices))
		for _, m := range o.modes {
			seen[m.ID] = true
		}
		for _, c := range opt.Choices {
			if !seen[c.Value] {
				seen[c.Value] = true
				o.modes = append(o.modes, acp.SessionMode{ID: c.Value, Name: c.Name, Description: c.Description})
			}
		}
		break
	}
	return o
}

// effectiveMode is the mode the host set last, until the agent reports
// another, else the mode the agent reported.
func (s *sessionState) effectiveMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.modeSet != "" {
		return s.modeSet
	}
	return s.modeState.CurrentModeID
}

// syncMode puts session h in the mode the host's policy wants before a
// prompt: the agent's restrictive mode while plan mode is on; back in the
// mode plan mode found once it is off; with RequireAsking, an asking mode
// instead of one that acts unasked. A mode that cannot be set is logged:
// the other layers still hold.
func (a *agent) syncMode(ctx context.Context, h *Session) {
	plan := a.c.PlanMode()
	h.mu.Lock()
	from, switched := h.planFrom, h.planSwitched
	h.mu.Unlock()
	if !plan && !switched && !a.opts.RequireAsking {
		return // the per-turn path of a client that asks for none of this
	}
	st := a.sessions.known(h.ID())
	if st == nil {
		return
	}
	off := st.modeOffer()
	cur := st.effectiveMode()
	target := ""
	switch {
	case plan:
		target = a.profile.planMode(off.modes)
	case switched:
		target = from
	}
	if !plan && a.opts.RequireAsking {
		m := target
		if m == "" {
			m = cur
		}
		if a.profile.kind(off.mode(m)) == ModeUnasked {
			if asks := a.profile.askingModes(off.modes, 1); len(asks) > 0 {
				target = asks[0]
			}
		}
	}
	if target != "" && target != cur && off.offers(target) {
		if err := a.setSessionMode(ctx, st, off, target); err != nil {
			a.opts.Debug.Logger.Warn("acphost: the agent's mode could not be set", "session", h.ID(), "mode", target, "err", err)
			return
		}
	}
	h.mu.Lock()
	switch {
	case plan && !h.planSwitched && target != "" && target != cur:
		h.planFrom, h.planSwitched = cur, true
	case !plan:
		h.planFrom, h.planSwitched = "", false
	}
	h.mu.Unlock()
}

// holdMode keeps plan mode's hold on session h when mode id is asked for
// (SetMode, the mode config option, SessionOptions.Mode at an open): while
// plan mode is on and the agent offers a plan mode other than id, id is
// not set but kept as the mode to put back when plan mode goes off, and
// the session is put in the plan mode now (held). A mode the agent does
// not offer is refused then, not kept. Outside plan mode, or for an
// agent with no plan mode, nothing is held.
func (a *agent) holdMode(ctx context.Context, h *Session, id string) (held bool, err error) {
	if !a.c.PlanMode() {
		return false, nil
	}
	st := a.sessions.known(h.ID())
	if st == nil {
		return false, nil
	}
	off := st.modeOffer()
	target := a.profile.planMode(off.modes)
	if target == "" || id == target {
		return false, nil
	}
	if !off.offers(id) {
		ids := make([]string, 0, min(len(off.modes), maxNamedModes))
		for _, m := range off.modes[:cap(ids)] {
			ids = append(ids, cutBytes(m.ID, maxModeBytes))
		}
		return false, fmt.Errorf("acphost: the agent offers no mode %q (the agent's modes: %s)", cutBytes(id, maxModeBytes), strings.Join(ids, ", "))
	}
	h.mu.Lock()
	h.setMode = id
	h.planFrom, h.planSwitched = id, true
	h.mu.Unlock()
	a.syncMode(ctx, h)
	return true, nil
}

// setSessionMode sets the session's mode the way the agent offers it.
func (a *agent) setSessionMode(ctx context.Context, st *sessionState, off modeOffer, id string) error {
	reports := st.modeReportCount()
	if off.configID != "" && !off.viaACP(id) {
		var res struct {
			ConfigOptions json.RawMessage `json:"configOptions"`
		}
		params := map[string]any{"sessionId": st.id, "configId": off.configID, "value": id}
		if err := a.call(ctx, "session/set_config_option", params, &res); err != nil {
			return err
		}
		// An answer without the option set is malformed: it does not
		// replace what the host knows of the session's options.
		if opts := acp.DecodeConfigOptions(res.ConfigOptions); hasOption(opts, off.configID) {
			st.setState(nil, opts)
			if v := optionValue(opts, off.configID); v != "" && v != id {
				// The answer is the agent's word on its mode: a refusal.
				return fmt.Errorf("acphost: the agent answered with its mode still %q", cutBytes(v, 64))
			}
		}
	} else if err := a.call(ctx, "session/set_mode", map[string]string{"sessionId": st.id, "modeId": id}, nil); err != nil {
		return err
	}
	st.noteModeSet(id, reports)
	return nil
}

func (s *sessionState) modeReportCount() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modeReports
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

// noteModeSet records that the host set mode id, until the agent reports
// another one; reports is modeReportCount from before the set. A mode the
// agent reported meanwhile is its word, which the host believes over its
// own request: whether it came before or after the answer, the dispatcher
// may have delivered it either side of this call.
func (s *sessionState) noteModeSet(id string, reports uint64) {
	s.mu.Lock()
	if s.modeState.CurrentModeID != id && s.modeReports == reports {
		s.modeSet = id
	}
	s.mu.Unlock()
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

// checkChange runs on the dispatcher for each tool call update, once
// merged: a change the agent reports done without the host's consent — an
// unasked one, or in plan mode any (every change asked there was rejected)
// — is counted (Enforcement.Unasked) and, in plan mode or with
// RequireAsking, logged and stops the running turn with an
// *UnaskedChangeError. A command reported in the agent's own
// read-only mode (or, with RequireAsking, in an asking mode) is the
// agent's judgement that it reads only, and an edit (not a command) of
// the agent's own state directories (Claude's plan file) is its own:
// neither counts.
// "in_progress" is no evidence: opencode and Codex report it before they
// ask. History a session/load replays is not what the agent does now: it
// is not counted.
func (s *sessionState) checkChange(tc *acp.ToolCall) {
	if tc.Status != acp.StatusCompleted || !changes(tc) && !s.askedAChange(tc.ID) || s.replaying.Load() {
		return
	}
	a := s.a
	plan := a.c.PlanMode()
	asked, allowed := s.asked(tc.ID)
	if !plan && allowed {
		return
	}
	off := s.modeOffer()
	mode := s.effectiveMode()
	kind := a.profile.kind(off.mode(mode))
	// The agent's judgement that a command reads only stands when it did
	// not ask; one it asked about and was refused, then ran, is a change.
	if !asked && tc.Kind == acp.ToolExecute && !tc.HasDiff() && (kind == ModeReadOnly || !plan && kind == ModeAsks) {
		return
	}
	if tc.Kind != acp.ToolExecute && a.insideState(tc) {
		return // a command's locations do not bound what it changes
	}
	asks := namedModes(a.profile.askingModes(off.modes, maxNamedModes))
	err := &UnaskedChangeError{ToolCall: *tc, PlanMode: plan, Mode: mode, AskingModes: asks}
	if h := s.pub.Load(); h != nil {
		h.unasked.Add(1)
	}
	if !plan && !a.opts.RequireAsking {
		return // the agent's own decision, which the host lets stand
	}
	a.opts.Debug.Logger.Warn("acphost: "+err.Error()[len("acphost: "):], "session", s.id)
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		t.halt(err)
	}
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

// insideState reports whether every file tc names lies in the agent's own
// state directories (none named: no). For an edit, delete or move only:
// what a command changes its locations do not say.
func (a *agent) insideState(tc *acp.ToolCall) bool {
	var paths []string
	for _, l := range tc.Locations {
		paths = append(paths, l.Path)
	}
	for _, c := range tc.Content {
		if c.Diff != nil {
			paths = append(paths, c.Diff.Path)
		}
	}
	dirs := a.stateDirs
	if len(paths) == 0 || len(dirs) == 0 {
		return false
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) || !slices.ContainsFunc(dirs, func(d string) bool { return confine.Within(d, filepath.Clean(p)) }) {
			return false
		}
	}
	return true
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
