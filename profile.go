package acphost

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/claude"
	"github.com/acphost/acphost/codex"
	"github.com/acphost/acphost/gemini"
	"github.com/acphost/acphost/internal/confine"
	"github.com/acphost/acphost/opencode"
)

// AgentProfile is what the host knows of an agent beyond what it says on
// the wire: which of its modes keep it from changing files, which ask the
// host before a change, which act without asking, and where it keeps its
// own state. A profile never adds a mode: only modes the agent offers (as
// ACP modes or as a config option of category "mode") are used, and a
// mode no profile names is judged by its id and name (see ModeKind).
type AgentProfile struct {
	// Name names the profile ("claude", "codex", …).
	Name string
	// PlanModes are the agent's restrictive modes (its plan or read-only
	// mode), best first: plan mode puts each session in the first one the
	// agent offers (else in its first asking mode).
	PlanModes []string
	// AskingModes ask the host before every change, best first:
	// ACPOptions.RequireAsking puts a session that is in an unasking mode
	// in the first one offered.
	AskingModes []string
	// UnaskedModes change files or run commands without asking.
	UnaskedModes []string
	// StateDirs are where the agent keeps its own state: they stay
	// writable under the kernel layer of plan mode (Confinement). "~/" is
	// the agent's home directory; a leading "$VAR" is that variable of the
	// agent's environment, and the entry is skipped when it is unset.
	StateDirs []string
	// NoPIDNamespace: the agent breaks as PID 1 of a PID namespace of its
	// own, so ContainAuto holds it by a cgroup or else its process group
	// (with the warning every step down gives), never a namespace;
	// ContainPIDNamespace still insists.
	NoPIDNamespace bool
	// Match recognises the agent by its agentInfo name or its command:
	// any of these words, case-insensitive. Empty for a profile given in
	// ACPOptions.Profile.
	Match []string
}

// ModeKind says what a session mode does about changes.
type ModeKind uint8

const (
	// ModeUnknown: neither the profile nor the mode's words tell.
	ModeUnknown ModeKind = iota
	// ModeReadOnly: the agent's plan or read-only mode.
	ModeReadOnly
	// ModeAsks: the agent asks the host before a change.
	ModeAsks
	// ModeUnasked: the agent changes files or runs commands without asking.
	ModeUnasked
)

// String returns "unknown", "read-only", "asks" or "unasked".
func (k ModeKind) String() string {
	switch k {
	case ModeReadOnly:
		return "read-only"
	case ModeAsks:
		return "asks"
	case ModeUnasked:
		return "unasked"
	}
	return "unknown"
}

// KnownProfiles returns the profiles Start recognises agents by (see
// AgentProfile.Match), in the order they are tried: a copy, which the
// caller may change without changing what Start recognises.
func KnownProfiles() []AgentProfile {
	out := make([]AgentProfile, len(knownProfiles))
	for i, p := range knownProfiles {
		p.PlanModes, p.AskingModes, p.UnaskedModes = slices.Clone(p.PlanModes), slices.Clone(p.AskingModes), slices.Clone(p.UnaskedModes)
		p.StateDirs, p.Match = slices.Clone(p.StateDirs), slices.Clone(p.Match)
		out[i] = p
	}
	return out
}

var knownProfiles = []AgentProfile{
	// The legacy adapter's plan mode ran Bash and Write without asking
	// (interop, claude-agent-acp 0.23.1): plan mode uses its asking mode.
	{Name: "claude-legacy", Match: []string{"@zed-industries/claude-agent-acp", "zed-industries/claude"},
		AskingModes: []string{claude.ModeDefault}, UnaskedModes: []string{claude.ModePlan, claude.ModeAcceptEdits, claude.ModeBypass},
		StateDirs: claude.StateDirs},
	{Name: "claude", Match: []string{"claude"},
		PlanModes: []string{claude.ModePlan}, AskingModes: []string{claude.ModeDefault},
		UnaskedModes: []string{claude.ModeAuto, claude.ModeAcceptEdits, claude.ModeBypass}, StateDirs: claude.StateDirs},
	// The TypeScript adapter's apply_patch never returns after its
	// approval when the adapter is PID 1 of a namespace (interop as an
	// unprivileged user; the Rust adapter is fine).
	{Name: "codex-ts", Match: []string{"@agentclientprotocol/codex-acp", "agentclientprotocol/codex"}, NoPIDNamespace: true,
		PlanModes: []string{codex.ModeReadOnly}, AskingModes: []string{codex.ModeReadOnly},
		UnaskedModes: []string{codex.ModeAgent, codex.ModeAgentFullAccess, codex.ModeWorkspaceWrite},
		StateDirs:    codex.StateDirs},
	{Name: "codex", Match: []string{"codex"},
		PlanModes: []string{codex.ModeReadOnly}, AskingModes: []string{codex.ModeReadOnly},
		UnaskedModes: []string{codex.ModeAgent, codex.ModeAgentFullAccess, codex.ModeWorkspaceWrite, codex.ModeAuto, codex.ModeFullAccess},
		StateDirs:    codex.StateDirs},
	{Name: "gemini", Match: []string{"gemini"},
		PlanModes: []string{gemini.ModePlan}, AskingModes: []string{gemini.ModeDefault},
		UnaskedModes: []string{gemini.ModeAutoEdit, gemini.ModeYolo}, StateDirs: gemini.StateDirs},
	{Name: "opencode", Match: []string{"opencode"},
		PlanModes: []string{opencode.ModePlan}, StateDirs: opencode.StateDirs},
}

// recogniseProfile finds the known profile whose words occur in any of
// names (the agent's agentInfo name, its command); nil when none does.
func recogniseProfile(names ...string) *AgentProfile {
	for i := range knownProfiles {
		p := &knownProfiles[i]
		for _, n := range names {
			n = strings.ToLower(n)
			for _, w := range p.Match {
				if n != "" && strings.Contains(n, w) {
					return p
				}
			}
		}
	}
	return nil
}

// kind says what mode m does: the profile's word for it, else its id's
// and name's.
func (p *AgentProfile) kind(m acp.SessionMode) ModeKind {
	if p != nil {
		switch {
		case slices.Contains(p.PlanModes, m.ID):
			return ModeReadOnly
		case slices.Contains(p.AskingModes, m.ID):
			return ModeAsks
		case slices.Contains(p.UnaskedModes, m.ID):
			return ModeUnasked
		}
	}
	return kindFromWords(m.ID + " " + m.Name)
}

// modeWords recognise a mode no profile names, by its id and name, the
// first kind whose words occur winning: a mode that says it acts unasked
// is taken at its word even when it also says "plan" ("Auto-plan"), for
// plan mode must never pick such a mode, nor detection let its commands
// pass as read-only.
var modeWords = []struct {
	kind  ModeKind
	words []string
}{
	{ModeUnasked, []string{"auto", "yolo", "bypass", "full-access", "full access", "accept", "dontask", "don't ask", "never ask"}},
	{ModeReadOnly, []string{"plan", "read-only", "readonly", "read only"}},
	{ModeAsks, []string{"default", "ask", "manual"}},
}

func kindFromWords(s string) ModeKind {
	s = strings.ToLower(s)
	for _, mw := range modeWords {
		for _, w := range mw.words {
			if strings.Contains(s, w) {
				return mw.kind
			}
		}
	}
	return ModeUnknown
}

// pick returns the first of ids offered, else the first offered mode of
// kind k (judged by words), else "".
func (p *AgentProfile) pick(offered []acp.SessionMode, ids []string, k ModeKind) string {
	for _, id := range ids {
		if slices.ContainsFunc(offered, func(m acp.SessionMode) bool { return m.ID == id }) {
			return id
		}
	}
	for _, m := range offered {
		if p.kind(m) == k {
			return m.ID
		}
	}
	return ""
}

// planMode is the mode plan mode puts a session in: the agent's
// restrictive mode among offered, else one that asks (whose every ask the
// host then rejects); "" when it offers neither.
func (p *AgentProfile) planMode(offered []acp.SessionMode) string {
	var ids []string
	if p != nil {
		ids = p.PlanModes
	}
	if m := p.pick(offered, ids, ModeReadOnly); m != "" {
		return m
	}
	if asks := p.askingModes(offered, 1); len(asks) > 0 {
		return asks[0]
	}
	return ""
}

// askingModes are the offered modes that ask, best first, n at most (n <
// 0: all). Linear in what the agent offers, which it may make huge.
func (p *AgentProfile) askingModes(offered []acp.SessionMode, n int) []string {
	var out []string
	seen := map[string]bool{}
	add := func(id string) bool {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
		return n >= 0 && len(out) >= n
	}
	if p != nil {
		for _, id := range p.AskingModes {
			if slices.ContainsFunc(offered, func(m acp.SessionMode) bool { return m.ID == id }) && add(id) {
				return out
			}
		}
	}
	for _, m := range offered {
		if p.kind(m) == ModeAsks && add(m.ID) {
			return out
		}
	}
	return out
}

// stateDirs resolves StateDirs for an agent whose environment is env
// (KEY=value; nil: this process's) and returns the absolute paths.
func (p *AgentProfile) stateDirs(env []string) []string {
	if p == nil {
		return nil
	}
	lookup := func(k string) string {
		if env == nil {
			return os.Getenv(k)
		}
		return envValue(env, k)
	}
	home := lookup("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	var out []string
	for _, d := range p.StateDirs {
		switch {
		case strings.HasPrefix(d, "~/"):
			if home == "" {
				continue
			}
			d = filepath.Join(home, d[2:])
		case strings.HasPrefix(d, "$"):
			name, rest, _ := strings.Cut(d[1:], "/")
			v := lookup(name)
			if v == "" {
				continue
			}
			d = filepath.Join(v, rest)
		}
		if filepath.IsAbs(d) && !slices.Contains(out, d) {
			out = append(out, filepath.Clean(d))
		}
	}
	return out
}

// stateDirsOutside is stateDirs without the directories that, their
// symlinks resolved, are, hold or lie in project (the agent's working
// directory; "" this process's): such a directory is not the agent's own
// state — a "~/" whose home holds the project, a CLAUDE_CONFIG_DIR of "/",
// a symlink to the project the agent made on an earlier, unconfined run —
// and kept, it would open the project to the agent under plan mode's
// kernel layer and hide its edits from detection.
func (p *AgentProfile) stateDirsOutside(env []string, project string) []string {
	if project == "" {
		project, _ = os.Getwd()
	}
	var out []string
	for _, d := range p.stateDirs(env) {
		if !confine.Overlap(d, project) {
			out = append(out, d)
		}
	}
	return out
}

// startProfile is the profile known before the agent speaks: given, or
// named by its command (confinement is set before initialize).
func startProfile(o *ACPOptions) *AgentProfile {
	if o.Profile != nil {
		return o.Profile
	}
	return recogniseProfile(commandWords(o)...)
}

// commandWords are the agent's program and arguments (for "npx -y
// @agentclientprotocol/claude-agent-acp" the package names the agent).
func commandWords(o *ACPOptions) []string {
	return append([]string{filepath.Base(o.Command)}, o.Args...)
}

// namespaceRefused is why ContainAuto must not put this agent in a PID
// namespace; nil when it may.
func (p *AgentProfile) namespaceRefused() error {
	if p == nil || !p.NoPIDNamespace {
		return nil
	}
	return fmt.Errorf("acphost: containment: the %s profile says its agent breaks in a PID namespace (%w)", p.Name, ErrUnsupported)
}
