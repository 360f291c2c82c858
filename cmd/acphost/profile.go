package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// profile is what acphost knows about an agent beyond the command that
// starts it. There is one per agent, and it applies however the agent was
// found: by its built-in name, its id in the ACP registry, or a config
// file entry whose command runs its package or binary (so a pinned
// "npx -y @agentclientprotocol/claude-agent-acp@0.101.0" of your own is
// still Claude). A config entry's own fields win over the profile's.
//
// New knowledge about an agent is a new field here, filled in profiles
// below and applied in (agentDef).withProfile or where the field is used.
type profile struct {
	name        string   // the built-in agent's name
	registryIDs []string // its ids in the ACP registry
	packages    []string // npm or PyPI packages (no version) that are this agent
	binaries    []string // base names of its executable

	// askingMode is the session mode that asks before acting, set when no
	// --mode (nor the config entry's mode) is given: some agents start in
	// one that runs commands unasked.
	askingMode string
	// planMode is the agent's own plan-mode id, when it has one (issue
	// 24: the library's claude/ and codex/ packages name them).
	planMode string
	// stateDirs are where the agent keeps its state (logins, sessions,
	// settings), relative to $HOME: with --writable they are writable too,
	// when they exist, or the agent cannot run confined.
	stateDirs []string
	// authHint says how the agent is logged in, for acphost agents.
	authHint string
	// provenVersion is the version acphost's tests ran (interop/run.sh,
	// or the registry's for an agent proven only through the registry).
	provenVersion string
}

// profiles are the agents acphost knows.
var profiles = []profile{
	{name: "claude", registryIDs: []string{"claude-acp", "claude-code-acp"},
		packages: []string{"@agentclientprotocol/claude-agent-acp", "@zed-industries/claude-agent-acp", "@zed-industries/claude-code-acp"},
		// The adapter starts in its own "auto" mode, which runs shell
		// commands without asking; "default" asks.
		askingMode: "default", planMode: "plan", stateDirs: []string{".claude"},
		authHint:      "ANTHROPIC_API_KEY, or acphost login --agent claude",
		provenVersion: "0.101.0"},
	{name: "codex", registryIDs: []string{"codex-acp"},
		packages:  []string{"@agentclientprotocol/codex-acp", "@zed-industries/codex-acp"},
		binaries:  []string{"codex-acp"},
		stateDirs: []string{".codex"}, authHint: "OPENAI_API_KEY or CODEX_API_KEY, or acphost login --agent codex",
		provenVersion: "2.6.0"},
	{name: "gemini", registryIDs: []string{"gemini"}, packages: []string{"@google/gemini-cli"},
		planMode: "plan", stateDirs: []string{".gemini"}, authHint: "GEMINI_API_KEY, or acphost login --agent gemini",
		provenVersion: "0.61.0"},
	{name: "opencode", registryIDs: []string{"opencode"}, packages: []string{"opencode-ai"}, binaries: []string{"opencode"},
		stateDirs: []string{".local/share/opencode", ".config/opencode"}, provenVersion: "1.18.33"},
	{name: "qwen", registryIDs: []string{"qwen-code"}, packages: []string{"@qwen-code/qwen-code"}, stateDirs: []string{".qwen"}},
	{name: "auggie", registryIDs: []string{"auggie"}, packages: []string{"@augmentcode/auggie"}, stateDirs: []string{".augment"}},
	{name: "cline", registryIDs: []string{"cline"}, packages: []string{"cline"}, stateDirs: []string{".cline"}},
	{name: "copilot", registryIDs: []string{"github-copilot"}, packages: []string{"@github/copilot-language-server"}},
	{name: "droid", registryIDs: []string{"factory-droid"}, packages: []string{"droid"}, stateDirs: []string{".factory"}},
	// Devin, from what the registry says of it (August 2026): the binary
	// bin/devin of Cognition's per-platform archives, run as "devin acp".
	// It came to acphost through the registry, so that is where its
	// version comes from; its login methods are those it advertises at
	// initialize (acphost login --agent devin lists them).
	{name: "devin", registryIDs: []string{"devin"}, binaries: []string{"devin"},
		authHint:      "the methods it advertises: acphost login --agent devin",
		provenVersion: "3000.4.25 (registry)"},
}

// profileFor is the profile of an agent called name (built in, in the
// config file or in the registry), or of the package or binary its
// command runs; nil when acphost knows nothing of it.
func profileFor(name string, command []string) *profile {
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
func (d agentDef) withProfile(name string) agentDef {
	p := profileFor(name, d.Command)
	if p == nil {
		return d
	}
	d.profile = p
	if d.Mode == "" {
		d.Mode = p.askingMode
	}
	return d
}

// withStateDirs is writable with the existing state directories of d's
// profile added, for an agent confined with --writable (else it cannot
// keep its logins and sessions), each said on stderr.
func (c fileConfig) withStateDirs(d agentDef, writable []string) []string {
	if len(writable) == 0 || d.profile == nil {
		return writable
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return writable
	}
	for _, rel := range d.profile.stateDirs {
		dir := filepath.Join(home, rel)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && !slices.Contains(writable, dir) {
			writable = append(slices.Clone(writable), dir)
			c.reg.note("--writable: %s is writable too (the agent's state, from its profile)", dir)
		}
	}
	return writable
}
