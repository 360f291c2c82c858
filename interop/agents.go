//go:build interop

package interop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

// Agent describes one pinned agent build: where run.sh installs it, how to
// start it against a mock on loopback, and the quirks the tests expect.
type Agent struct {
	// Name is the subtest name and the install folder under .cache/agents.
	Name string
	// Spec is the npm spec run.sh installs (for messages).
	Spec string
	// Mode is ACPOptions.Mode: the session mode that makes the agent ask.
	Mode string
	// Presentation: the build attaches _meta.jetbrains.air.permission to
	// clients that declare AIR (ACPOptions.Advertise.PermissionPresentation).
	Presentation bool
	// PresentationTitle is the expected Presentation.Title for a shell
	// command writing file ("" to skip the check).
	PresentationTitle func(file string) string
	// Elicits: the build turns the model's AskUserQuestion tool call into
	// a form elicitation/create when the client advertises
	// elicitation.form, and leaves the tool out of the model's tool list
	// when it does not.
	Elicits bool
	// HostToolsEnv is added to the agent's environment in the host-tools
	// scenario (Claude defers MCP tools behind its tool search unless
	// ENABLE_TOOL_SEARCH=false).
	HostToolsEnv []string
	// HostToolsUnoffered: an agent gap. The build connects to the host's
	// MCP server (initialize, tools/list) but offers its model none of
	// the server's tools, with its tool search on or off; the host-tools
	// scenario checks for exactly this.
	HostToolsUnoffered bool
	// hostToolsPrep, if set, changes the agent's config under home for the
	// host-tools scenario.
	hostToolsPrep func(home string) error
	// RejectStop is the stop reason after a reject-kind answer.
	RejectStop acp.StopReason
	// FSWrite: the build's file-write tool goes through fs/write_text_file
	// when the client offers it; the tests serve fs for it.
	FSWrite bool
	// StaleAfterCancel: an agent bug. The prompt after a cancelled one is
	// answered at once with the cancelled turn's leftover result
	// (end_turn, no updates); its real transcript arrives during the
	// prompt after it, so the session's answers lag one prompt behind.
	StaleAfterCancel bool
	// unset are environment variables the agent must not inherit.
	unset []string
	// command returns the program and arguments, given the install folder.
	command func(inst string) (string, []string)
	// setup writes the agent's config under home and returns its env.
	setup func(home string, m *MockLLM) ([]string, error)
}

var commonUnset = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

func claudeSetup(home string, m *MockLLM) ([]string, error) {
	cfg := filepath.Join(home, ".claude")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		return nil, err
	}
	return []string{
		"CLAUDE_CONFIG_DIR=" + cfg,
		"ANTHROPIC_BASE_URL=" + m.URL,
		"ANTHROPIC_API_KEY=sk-ant-mock",
		"IS_SANDBOX=1", // required when running as root
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
	}, nil
}

var claudeUnset = []string{"ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_AGENT_ACP_PROTOCOL", "ANTHROPIC_MODEL"}

func codexSetup(home string, m *MockLLM) ([]string, error) {
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "mock"
check_for_update_on_startup = false
[model_providers.mock]
name = "Mock LLM"
base_url = "%s/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
[analytics]
enabled = false
`, m.URL)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	return []string{"CODEX_HOME=" + codexHome, "MOCK_API_KEY=sk-mock"}, nil
}

var codexUnset = []string{"OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL"}

func opencodeSetup(home string, m *MockLLM) ([]string, error) {
	cfgDir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		return nil, err
	}
	cfg := map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"autoupdate":  false,
		"share":       "disabled",
		"model":       "mock/mock-model",
		"small_model": "mock/mock-model",
		"provider": map[string]any{
			"mock": map[string]any{
				"npm":     "@ai-sdk/openai-compatible",
				"name":    "Mock LLM",
				"options": map[string]any{"baseURL": m.URL + "/v1", "apiKey": "sk-mock"},
				"models": map[string]any{
					"mock-model": map[string]any{"name": "Mock Model", "tool_call": true, "reasoning": false,
						"limit": map[string]any{"context": 128000, "output": 8192}},
				},
			},
		},
		"enabled_providers": []string{"mock"},
		"permission":        map[string]any{"bash": "ask", "edit": "ask", "webfetch": "deny"},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	path := filepath.Join(home, "opencode.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, err
	}
	return []string{
		"OPENCODE_CONFIG=" + path,
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1", "OPENCODE_DISABLE_PROJECT_CONFIG=1",
		// opencode npm-installs @opencode-ai/plugin in the background on
		// every start; keep that on loopback, where it 404s harmlessly.
		"npm_config_registry=" + m.URL + "/npm-blocked/",
	}, nil
}

func geminiSetup(home string, m *MockLLM) ([]string, error) {
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	settings := `{
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "general": { "disableAutoUpdate": true, "disableUpdateNag": true, "checkpointing": { "enabled": false } },
  "ui": { "hideTips": true }
}
`
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(settings), 0o644); err != nil {
		return nil, err
	}
	return []string{
		"GEMINI_API_KEY=mock-key",
		"GOOGLE_GEMINI_BASE_URL=" + m.URL,
		"GEMINI_CLI_NO_RELAUNCH=true", "NO_BROWSER=true",
	}, nil
}

// geminiTrustFolder turns gemini's folder trust off: in a folder it does
// not trust, gemini connects no MCP server.
func geminiTrustFolder(home string) error {
	p := filepath.Join(home, ".gemini", "settings.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	sec, _ := s["security"].(map[string]any)
	if sec == nil {
		sec = map[string]any{}
	}
	sec["folderTrust"] = map[string]any{"enabled": false}
	s["security"] = sec
	if b, err = json.Marshal(s); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

var geminiUnset = []string{"GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_APPLICATION_CREDENTIALS"}

func nodeEntry(rel string, args ...string) func(string) (string, []string) {
	return func(inst string) (string, []string) {
		return "node", append([]string{filepath.Join(inst, "node_modules", rel)}, args...)
	}
}

func binEntry(rel string, args ...string) func(string) (string, []string) {
	return func(inst string) (string, []string) {
		return filepath.Join(inst, "node_modules", rel), args
	}
}

// Agents are the six builds of reference/real-agents.md.
var Agents = []Agent{
	{
		Name: "claude", Spec: "@agentclientprotocol/claude-agent-acp@0.101.0",
		Mode:              "default", // the initial mode is auto, which runs Bash without asking
		Presentation:      true,
		PresentationTitle: func(file string) string { return "echo hi > " + file },
		Elicits:           true,
		HostToolsEnv:      []string{"ENABLE_TOOL_SEARCH=false"},
		RejectStop:        acp.StopEndTurn,
		unset:             claudeUnset,
		command:           nodeEntry("@agentclientprotocol/claude-agent-acp/dist/index.js"),
		setup:             claudeSetup,
	},
	{
		Name: "claude-legacy", Spec: "@zed-industries/claude-agent-acp@0.23.1",
		RejectStop:       acp.StopEndTurn,
		StaleAfterCancel: true,
		HostToolsEnv:     []string{"ENABLE_TOOL_SEARCH=false"},
		unset:            claudeUnset,
		command:          nodeEntry("@zed-industries/claude-agent-acp/dist/index.js"),
		setup:            claudeSetup,
	},
	{
		Name: "codex-rs", Spec: "@zed-industries/codex-acp@0.16.0",
		RejectStop: acp.StopCancelled, // the only reject option is abort, which ends the turn
		unset:      codexUnset,
		command:    binEntry("@zed-industries/codex-acp-linux-x64/bin/codex-acp"),
		setup:      codexSetup,
	},
	{
		Name: "codex-ts", Spec: "@agentclientprotocol/codex-acp@2.6.0",
		Mode:               "read-only", // the default "agent" mode has a guardian LLM decide instead of the user
		Presentation:       true,
		PresentationTitle:  func(string) string { return "Run command?" },
		RejectStop:         acp.StopCancelled,
		unset:              codexUnset,
		command:            nodeEntry("@agentclientprotocol/codex-acp/dist/index.js"),
		setup:              codexSetup,
		HostToolsUnoffered: true,
	},
	{
		Name: "opencode", Spec: "opencode-ai@1.18.33",
		RejectStop: acp.StopEndTurn,
		FSWrite:    true,
		command:    binEntry("opencode-linux-x64/bin/opencode", "acp"),
		setup:      opencodeSetup,
	},
	{
		Name: "gemini", Spec: "@google/gemini-cli@0.61.0",
		RejectStop:    acp.StopEndTurn,
		FSWrite:       true,
		unset:         geminiUnset,
		command:       nodeEntry("@google/gemini-cli/bundle/gemini.js", "--acp"),
		setup:         geminiSetup,
		hostToolsPrep: geminiTrustFolder,
	},
}

// Options returns the ACPOptions that start a in its own HOME against m,
// with the session in work. The command runs through env(1) so that the
// variables in unset are removed: ACPOptions.Process.Env can only add.
func (a Agent) Options(inst, home, work string, m *MockLLM) (acphost.ACPOptions, error) {
	env, err := a.setup(home, m)
	if err != nil {
		return acphost.ACPOptions{}, err
	}
	env = append(env, "HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
	prog, args := a.command(inst)
	var wrapped []string
	for _, u := range append(append([]string(nil), commonUnset...), a.unset...) {
		wrapped = append(wrapped, "-u", u)
	}
	wrapped = append(wrapped, prog)
	wrapped = append(wrapped, args...)
	cmd := "env"
	if dir := os.Getenv("INTEROP_TRACE"); dir != "" {
		// Debugging aid: record both directions of the wire.
		base := filepath.Join(dir, filepath.Base(filepath.Dir(filepath.Dir(work))))
		wrapped = append([]string{"-c", `tee -a "$0.in.jsonl" | env "$@" | tee -a "$0.out.jsonl"`, base}, wrapped...)
		cmd = "bash"
	}
	if dir := os.Getenv("INTEROP_STRACE"); dir != "" {
		// Debugging aid: log every connect(2) of the agent's process tree.
		base := filepath.Join(dir, filepath.Base(filepath.Dir(filepath.Dir(work))))
		wrapped = append([]string{"-f", "-qq", "-e", "trace=connect,sendto,sendmmsg", "-s", "120", "-o", base + ".strace", cmd}, wrapped...)
		cmd = "strace"
	}
	return acphost.ACPOptions{
		Command: cmd,
		Args:    wrapped,
		Dir:     work,
		Mode:    a.Mode,
		Process: acphost.ProcessOptions{Env: env},
	}, nil
}

// String names the agent and its build.
func (a Agent) String() string { return a.Name + " (" + a.Spec + ")" }
