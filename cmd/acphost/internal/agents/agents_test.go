package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/acp"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvConfig, path)
	return path
}

// The config file's agents join the built-in ones (one of its name
// replacing it), each with where it comes from.
func TestLoadAndLookup(t *testing.T) {
	path := writeConfig(t, `{"defaults": {"agent": "mine", "timeout": "5m"},
		"agents": {"mine": {"command": ["my-agent", "--acp"], "env": {"B": "2", "A": "1"}, "mcpServers": {"fs": {"command": "mcp-fs"}}},
		           "codex": {"command": ["/opt/codex-acp"]}}}`)
	file, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if file.Path() != path || file.Defaults.Agent != "mine" {
		t.Errorf("file %+v", file)
	}
	d, err := file.Lookup("mine")
	if err != nil || strings.Join(d.Command, " ") != "my-agent --acp" || d.Source() != path ||
		strings.Join(d.EnvList(), " ") != "A=1 B=2" || len(d.MCPServers) != 1 || d.MCPServers[0].Name != "fs" {
		t.Errorf("mine: %+v %v", d, err)
	}
	d, err = file.Lookup("codex")
	if err != nil || d.Command[0] != "/opt/codex-acp" || d.profile == nil || d.profile.name != "codex" {
		t.Errorf("codex of the file: %+v %v", d, err)
	}
	d, err = file.Lookup("gemini")
	if err != nil || d.Source() != "built-in" || strings.Join(d.Command, " ") != strings.Join(Builtin["gemini"].Command, " ") {
		t.Errorf("gemini: %+v %v", d, err)
	}
}

func TestLoadRefuses(t *testing.T) {
	for text, want := range map[string]string{
		`{"agents": {"demo": {"command": ["x"]}}}`:         `agent "demo": want a name other than "demo"`,
		`{"agents": {"a": {}}}`:                            `agent "a": want a name other than "demo" and a command`,
		`{"defaults": {"timeout": "soon"}}`:                `defaults.timeout "soon": want a duration`,
		`{"bogus": 1}`:                                     `unknown field "bogus"`,
		`{"defaults": {"mcpServers": [{"command": "x"}]}}`: `defaults.mcpServers[0]: want an object with a "name"`,
		`{"agents": {"a": {"command": ["x"], "mcpServers": {"s": {"url": "u", "command": "c"}}}}}`: `server "s": a http server wants a "url"`,
	} {
		writeConfig(t, text)
		if _, err := Load(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
	t.Setenv(EnvConfig, filepath.Join(t.TempDir(), "none.json"))
	if _, err := Load(); err != nil {
		t.Errorf("a missing file: %v", err)
	}
}

// Both forms of a server list read the same; the named form is sorted.
func TestMCPList(t *testing.T) {
	var named, array MCPList
	if err := json.Unmarshal([]byte(`{"web": {"url": "https://x/mcp", "headers": {"K": "v"}}, "fs": {"command": "mcp-fs", "args": ["/"], "env": {"Z": "1", "A": "2"}}}`), &named); err != nil {
		t.Fatal(err)
	}
	if len(named) != 2 || named[0].Name != "fs" || named[0].Env[0].Name != "A" || named[1].Type != acp.MCPHTTP || named[1].Headers[0].Value != "v" {
		t.Errorf("named: %+v", named)
	}
	if err := json.Unmarshal([]byte(`[{"name": "fs", "command": "other", "args": [], "env": []}]`), &array); err != nil {
		t.Fatal(err)
	}
	merged := MergeMCP(named, array)
	if len(merged) != 2 || merged[0].Command != "other" || named[0].Command != "mcp-fs" {
		t.Errorf("merged %+v (base %+v)", merged, named)
	}
	var bad MCPList
	if err := json.Unmarshal([]byte(`{"s": {"type": "ws", "url": "u"}}`), &bad); err == nil || !strings.Contains(err.Error(), `unknown type "ws"`) {
		t.Errorf("type ws: %v", err)
	}
}

func TestReadMCPConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "mcp.json")
	os.WriteFile(good, []byte(`{"mcpServers": {"fs": {"command": "mcp-fs"}}, "other": true}`), 0o600)
	none := filepath.Join(dir, "none.json")
	os.WriteFile(none, []byte(`{"servers": {}}`), 0o600)
	if l, err := ReadMCPConfig(good); err != nil || len(l) != 1 || l[0].Command != "mcp-fs" {
		t.Errorf("%v %v", l, err)
	}
	if _, err := ReadMCPConfig(none); err == nil || !strings.Contains(err.Error(), `no "mcpServers" object`) {
		t.Errorf("no mcpServers: %v", err)
	}
}
