package agents

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/claude"
)

// Profile is what acphost knows about an agent beyond the command that
// starts it. There is one per agent, and it applies however the agent was
// found: by its built-in name, its id in the ACP registry, or a config
// file entry whose command runs its package or binary (so a pinned
// "npx -y @agentclientprotocol/claude-agent-acp@0.101.0" of your own is
// still Claude). A config entry's own fields win over the profile's.
//
// Its modes and state directories are the library's (lib: the agent's
// entry of acphost.KnownProfiles(), or one given here for an agent the
// library does not know, such as Devin), handed to the library as
// ACPOptions.Profile; the rest is what the command line needs. New
// knowledge about an agent is a new field here, filled in profiles below.
type Profile struct {
	name        string   // the built-in agent's name
	registryIDs []string // its ids in the ACP registry
	packages    []string // npm or PyPI packages (no version) that are this agent
	binaries    []string // base names of its executable

	lib *acphost.AgentProfile // modes and state directories; nil: the library recognises it by its command, or does not
	// startMode is the session mode set when no --mode (nor the config
	// entry's mode) is given: some agents start in one that runs commands
	// unasked.
	startMode string
	// AuthHint says how the agent is logged in, beyond the methods it
	// offers through ACP: acphost agents shows it, and a run the agent
	// refuses for want of a login says it (see loginHint).
	AuthHint string
	// ProvenVersion is the version acphost's tests ran (interop/run.sh),
	// or the registry's for an agent known only through the registry.
	ProvenVersion string
}

// libProfiles are the library's profiles, copied once: libProfile's
// pointers point into it.
var libProfiles = acphost.KnownProfiles()

// libProfile is the library's profile of that name.
func libProfile(name string) *acphost.AgentProfile {
	for i := range libProfiles {
		if libProfiles[i].Name == name {
			return &libProfiles[i]
		}
	}
	return nil
}

// devinProfile is Devin's, from what the registry says of it (August
// 2026): the binary bin/devin of Cognition's per-platform archives, run as
// "devin acp". Its modes and state directories are not known yet: plan
// mode then judges its modes by their words, and confines it (with
// --writable) to the temporary directory alone.
var devinProfile = acphost.AgentProfile{Name: "devin", Match: []string{"devin"}}

// profiles are the agents acphost knows.
var profiles = []Profile{
	{name: "claude", registryIDs: []string{"claude-acp"}, packages: []string{"@agentclientprotocol/claude-agent-acp"},
		lib: libProfile("claude"),
		// The adapter starts in its own "auto" mode, which runs shell
		// commands without asking; "default" asks.
		startMode: claude.ModeDefault,
		AuthHint:  "ANTHROPIC_API_KEY, or Claude Code's own login: run claude (npx @anthropic-ai/claude-code) and /login there once", ProvenVersion: "0.101.0"},
	{name: "claude-legacy", registryIDs: []string{"claude-code-acp"},
		packages: []string{"@zed-industries/claude-agent-acp", "@zed-industries/claude-code-acp"},
		lib:      libProfile("claude-legacy"), startMode: claude.ModeDefault, ProvenVersion: "0.23.1"},
	{name: "codex", registryIDs: []string{"codex-acp"},
		packages: []string{"@agentclientprotocol/codex-acp", "@zed-industries/codex-acp"}, binaries: []string{"codex-acp"},
		lib: libProfile("codex"), AuthHint: "OPENAI_API_KEY or CODEX_API_KEY, or acphost login --agent codex",
		ProvenVersion: "2.6.0"},
	{name: "gemini", registryIDs: []string{"gemini"}, packages: []string{"@google/gemini-cli"},
		lib: libProfile("gemini"), AuthHint: "GEMINI_API_KEY, or acphost login --agent gemini", ProvenVersion: "0.61.0"},
	{name: "opencode", registryIDs: []string{"opencode"}, packages: []string{"opencode-ai"}, binaries: []string{"opencode"},
		lib: libProfile("opencode"), ProvenVersion: "1.18.33"},
	{name: "qwen", registryIDs: []string{"qwen-code"}, packages: []string{"@qwen-code/qwen-code"}},
	{name: "auggie", registryIDs: []string{"auggie"}, packages: []string{"@augmentcode/auggie"}},
	{name: "cline", registryIDs: []string{"cline"}, packages: []string{"cline"}},
	{name: "copilot", registryIDs: []string{"github-copilot"}, packages: []string{"@github/copilot-language-server"}},
	{name: "droid", registryIDs: []string{"factory-droid"}, packages: []string{"droid"}},
	{name: "devin", registryIDs: []string{"devin"}, binaries: []string{"devin"}, lib: &devinProfile,
		AuthHint:      "the login methods it advertises: acphost login --agent devin lists them",
		ProvenVersion: "3000.4.25 (the registry's; not run here)"},
}

// ProfileFor is the profile of an agent called name (built in, in the
// config file or in the registry), or of the package or binary its
// command runs; nil when acphost knows nothing of it.
func ProfileFor(name string, command []string) *Profile {
	for i := range profiles {
		p := &profiles[i]
		if p.name == name || slices.Contains(p.registryIDs, name) {
			return p
		}
	}
	pkg, bin := commandPackage(command)
	for i := range profiles {
		p := &profiles[i]
		if (pkg != "" && slices.Contains(p.packages, pkg)) || (bin != "" && slices.Contains(p.binaries, bin)) {
			return p
		}
	}
	return nil
}

// commandPackage is the package (without its version) an npx or uvx
// command runs, or the base name of any other command's executable.
func commandPackage(command []string) (pkg, bin string) {
	if len(command) == 0 {
		return "", ""
	}
	tool := filepath.Base(command[0])
	if tool != "npx" && tool != "uvx" && tool != "bunx" && tool != "pnpx" {
		return "", strings.TrimSuffix(tool, ".exe")
	}
	args := command[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--package" || a == "-p" || a == "--from":
			if i+1 < len(args) {
				return stripVersion(args[i+1]), ""
			}
		case strings.HasPrefix(a, "--package="):
			return stripVersion(strings.TrimPrefix(a, "--package=")), ""
		case strings.HasPrefix(a, "-"):
		default:
			return stripVersion(a), ""
		}
	}
	return "", ""
}

// stripVersion is "@scope/pkg@1.2.3" → "@scope/pkg", "pkg==1" → "pkg".
func stripVersion(spec string) string {
	if name, _, ok := strings.Cut(spec, "=="); ok {
		return name
	}
	if i := strings.LastIndex(spec, "@"); i > 0 {
		return spec[:i]
	}
	return spec
}

// withProfile is d with what its profile adds (the entry's own fields win).
func (d Def) withProfile(name string) Def {
	p := ProfileFor(name, d.Command)
	if p == nil {
		return d
	}
	d.profile = p
	if d.Mode == "" {
		d.Mode = p.startMode
	}
	return d
}

// LibProfile is the profile the library is to be given for d: one the
// library does not know itself (Devin's). Nil for the others: the library
// recognises those by the agent's command (which names their package or
// binary however the agent was found) and its agentInfo name, finer than
// a name could (the legacy Claude adapter is not Claude's).
func (d Def) LibProfile() *acphost.AgentProfile {
	if d.profile == nil || d.profile.lib == nil {
		return nil
	}
	for i := range libProfiles {
		if &libProfiles[i] == d.profile.lib {
			return nil
		}
	}
	return d.profile.lib
}
