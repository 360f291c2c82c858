// Package agents is the agents acphost can start and what it knows of
// them: the built-in ones (Builtin, Demo), the user's config file (Load,
// FileConfig.Lookup), the agents of the ACP registry (a binary one
// installed on first use) and acphost agents, which lists and installs
// them (Command), each agent's Profile, and the MCP server lists the
// config file and --mcp-config give.
package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Def is a named agent: the command that starts it, the environment
// it needs, and the session mode to ask for when none is given.
type Def struct {
	Command     []string          `json:"command"`
	Env         map[string]string `json:"env,omitempty"`
	Mode        string            `json:"mode,omitempty"`
	Description string            `json:"description,omitempty"`
	// Config are session config options set once a session opens, as
	// --set does (a flag wins), e.g. {"model": "sonnet"}.
	Config map[string]string `json:"config,omitempty"`
	// Auth is the authentication method sent after initialize, as --auth.
	Auth string `json:"auth,omitempty"`
	// MCPServers are ACP McpServer objects (or the {"name": {...}}
	// object of Claude Code's .mcp.json), given to session/new (and
	// load, resume) after the defaults' ones.
	MCPServers MCPList `json:"mcpServers,omitempty"`
	// Kube runs the agent on Kubernetes as --kube-image or
	// --kube-warm-pool do (the flags win): {"image": "…", "namespace":
	// "…", "context": "…", "pull": "never"}, or {"warmPool": "…"} for a
	// pod claimed from an agent-sandbox warm pool. Command is then the
	// agent's command in the pod.
	Kube *Kube `json:"kube,omitempty"`
	// SystemPrompt is system-level instructions for the agent's sessions,
	// as --system-prompt (a flag wins); SystemPromptMode is its mode,
	// append (empty) or override, as --system-prompt-mode.
	SystemPrompt     string `json:"systemPrompt,omitempty"`
	SystemPromptMode string `json:"systemPromptMode,omitempty"`

	source  string       // "built-in", the config file that defines it, or the registry's origin
	profile *Profile     // what acphost knows of the agent beyond its command
	reg     *regAgentRef // set for an agent of the registry
}

// Kube is where on Kubernetes a named agent runs.
type Kube struct {
	Image     string `json:"image,omitempty"`
	WarmPool  string `json:"warmPool,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Context   string `json:"context,omitempty"`
	Pull      string `json:"pull,omitempty"`
}

// Demo names the built-in fake agent.
const Demo = "demo"

// Builtin are the npm-distributed agents of the ACP registry
// (github.com/agentclientprotocol/registry) that run on Linux, started
// through npx; the environment is the registry's. Unpinned: npx runs the
// newest release (pin one in the config file: "@scope/pkg@1.2.3"). Every
// other agent of the registry is there by its registry id (see
// registry.go); what acphost knows of each beyond its command is in
// its profile (profile.go).
var Builtin = map[string]Def{
	"claude": {Command: []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp"},
		Description: "Claude Code (Anthropic) through the ACP adapter"}, // its asking mode and login: see profiles
	"codex": {Command: []string{"npx", "-y", "@agentclientprotocol/codex-acp"},
		Description: "Codex (OpenAI) through the ACP adapter"},
	"gemini": {Command: []string{"npx", "-y", "@google/gemini-cli", "--acp"},
		Description: "Gemini CLI (Google)"},
	"opencode": {Command: []string{"npx", "-y", "opencode-ai", "acp"},
		Description: "opencode"},
	"qwen": {Command: []string{"npx", "-y", "@qwen-code/qwen-code", "--acp"},
		Description: "Qwen Code (Alibaba)"},
	"auggie": {Command: []string{"npx", "-y", "@augmentcode/auggie", "--acp"},
		Env:         map[string]string{"AUGMENT_DISABLE_AUTO_UPDATE": "1"},
		Description: "Auggie (Augment Code)"},
	"cline": {Command: []string{"npx", "-y", "cline", "--acp"},
		Description: "Cline"},
	"copilot": {Command: []string{"npx", "-y", "@github/copilot-language-server", "--acp"},
		Description: "GitHub Copilot"},
	"droid": {Command: []string{"npx", "-y", "droid", "exec", "--output-format", "acp-daemon"},
		Env:         map[string]string{"DROID_DISABLE_AUTO_UPDATE": "true", "FACTORY_DROID_AUTO_UPDATE_ENABLED": "false"},
		Description: "Factory Droid"},
}

// FileConfig is the user's config file (see configPath):
//
//	{
//	  "defaults": {"agent": "claude", "permission": "ask", "startTimeout": "5m"},
//	  "agents": {
//	    "claude": {"command": ["npx", "-y", "@agentclientprotocol/claude-agent-acp@0.101.0"]},
//	    "mine": {"command": ["/opt/mine/bin/agent", "--acp"], "env": {"MINE_LOG": "warn"}, "mode": "ask"}
//	  }
//	}
//
// An agent of the file replaces the built-in one of that name. Flags win
// over the defaults, the defaults over the built-in defaults.
type FileConfig struct {
	Defaults Defaults       `json:"defaults"`
	Agents   map[string]Def `json:"agents"`

	path string
	reg  *registryUse // which registry, and whether a lookup may install
}

type Defaults struct {
	Agent        string `json:"agent,omitempty"`
	Permission   string `json:"permission,omitempty"`
	Elicit       string `json:"elicit,omitempty"`
	Timeout      string `json:"timeout,omitempty"`
	StartTimeout string `json:"startTimeout,omitempty"`
	Presentation *bool  `json:"presentation,omitempty"`
	// NonInteractivePermissions is --non-interactive-permissions.
	NonInteractivePermissions string `json:"nonInteractivePermissions,omitempty"`
	// PermissionPolicy is --permission-policy (relative: to the config
	// file's directory).
	PermissionPolicy string `json:"permissionPolicy,omitempty"`
	// MCPServers go to every agent's sessions.
	MCPServers MCPList `json:"mcpServers,omitempty"`
	// Config are session config options for every agent (the agent's
	// own and --set win).
	Config map[string]string `json:"config,omitempty"`
	// SystemPrompt and SystemPromptMode are every agent's system prompt
	// (an agent's own and --system-prompt win), as Def's.
	SystemPrompt     string `json:"systemPrompt,omitempty"`
	SystemPromptMode string `json:"systemPromptMode,omitempty"`
	// Registry is the ACP registry to use, a file (relative: to the config
	// file's directory) or an https URL, as --registry ($ACPHOST_REGISTRY
	// wins over it). Empty: the official one.
	Registry string `json:"registry,omitempty"`
}

// EnvConfig names the config file instead of the default place.
const EnvConfig = "ACPHOST_CONFIG"

// configPath is $ACPHOST_CONFIG, else acphost/config.json under the OS's
// user config directory ($XDG_CONFIG_HOME or ~/.config on Linux).
func configPath() (string, error) {
	if p := os.Getenv(EnvConfig); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "acphost", "config.json"), nil
}

// Load reads the config file; a missing one is an empty config.
func Load() (FileConfig, error) {
	path, err := configPath()
	if err != nil {
		return FileConfig{reg: newRegistryUse("", "")}, nil // no home: no file
	}
	cfg := FileConfig{path: path, reg: newRegistryUse("", "")}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	cfg.reg = newRegistryUse(cfg.Defaults.Registry, path)
	for name, d := range cfg.Agents {
		if name == "" || name == Demo || len(d.Command) == 0 || d.Command[0] == "" {
			return cfg, fmt.Errorf("%s: agent %q: want a name other than %q and a command", path, name, Demo)
		}
	}
	if err := checkMCP("defaults.mcpServers", cfg.Defaults.MCPServers); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	for name, d := range cfg.Agents {
		if err := checkMCP("agents."+name+".mcpServers", d.MCPServers); err != nil {
			return cfg, fmt.Errorf("%s: %w", path, err)
		}
	}
	modes := []struct{ name, mode string }{{"defaults.systemPromptMode", cfg.Defaults.SystemPromptMode}}
	for name, d := range cfg.Agents {
		modes = append(modes, struct{ name, mode string }{"agents." + name + ".systemPromptMode", d.SystemPromptMode})
	}
	for _, m := range modes {
		if m.mode != "" && m.mode != "append" && m.mode != "override" {
			return cfg, fmt.Errorf("%s: %s %q: want append or override", path, m.name, m.mode)
		}
	}
	for _, v := range []struct{ name, s string }{{"timeout", cfg.Defaults.Timeout}, {"startTimeout", cfg.Defaults.StartTimeout}} {
		if v.s == "" {
			continue
		}
		if d, err := time.ParseDuration(v.s); err != nil || d < 0 {
			return cfg, fmt.Errorf("%s: defaults.%s %q: want a duration such as 5m", path, v.name, v.s)
		}
	}
	return cfg, nil
}

// agents merges the built-in agents and the file's.
func (c FileConfig) agents() map[string]Def {
	all := map[string]Def{}
	for name, d := range Builtin {
		d.source = "built-in"
		all[name] = d
	}
	for name, d := range c.Agents {
		d.source = c.path
		all[name] = d
	}
	return all
}

// Lookup finds a named agent: built in, in the config file, or in
// the registry (an agent of the registry that is a binary is installed on
// first use, when parseArgs allowed it: see registryUse).
func (c FileConfig) Lookup(name string) (Def, error) {
	all := c.agents()
	if d, ok := all[name]; ok {
		return d.withProfile(name), nil
	}
	d, found, inRegistry, err := c.registryAgent(name)
	if found || err != nil {
		return d, err
	}
	names := []string{Demo}
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	more := ""
	if inRegistry > 0 {
		more = fmt.Sprintf(", and the registry's %d", inRegistry)
	}
	return Def{}, fmt.Errorf("--agent %s: no such agent; known: %s%s (acphost agents lists them with their commands)", name, strings.Join(names, ", "), more)
}

// Source is where d is defined: "built-in", the config file that defines
// it, or the registry's origin.
func (d Def) Source() string { return d.source }

// Path is the config file's path ("" with no home directory).
func (c FileConfig) Path() string { return c.path }

// EnvList is d.Env as KEY=value, sorted.
func (d Def) EnvList() []string {
	var env []string
	for k, v := range d.Env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// printNamedAgents is the table of the built-in and configured agents,
// each with its command, and the config file's place.
func printNamedAgents(cfg FileConfig, stdout io.Writer) {
	all := cfg.agents()
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCOMMAND\tFROM")
	fmt.Fprintf(tw, "%s\t%s\t%s\n", Demo, "(this program, as the built-in fake agent)", "built-in")
	for _, n := range names {
		d := all[n].withProfile(n)
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, d.commandLine(), d.source)
	}
	tw.Flush()
	if cfg.path != "" {
		note := "(none yet)"
		if _, err := os.Stat(cfg.path); err == nil {
			note = ""
		}
		fmt.Fprintf(stdout, "\nconfig file: %s %s\n", cfg.path, note)
	}
	if cfg.Defaults.Agent != "" {
		fmt.Fprintf(stdout, "default agent: %s\n", cfg.Defaults.Agent)
	}
}

// commandLine is d's environment, command and mode as one line.
func (d Def) commandLine() string {
	cmd := strings.Join(d.Command, " ")
	if env := d.EnvList(); len(env) > 0 {
		cmd = strings.Join(env, " ") + " " + cmd
	}
	if d.Mode != "" {
		cmd += "  (mode " + d.Mode + ")"
	}
	return cmd
}
