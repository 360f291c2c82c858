package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// sentMCP is the mcpServers of the recorded session/new, as sent.
func sentMCP(t *testing.T, record string) string {
	t.Helper()
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	i := indexOf(msgs, "session/new")
	if i < 0 {
		t.Fatal("no session/new")
	}
	var p struct {
		MCPServers json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(msgs[i].Params, &p); err != nil {
		t.Fatal(err)
	}
	return string(p.MCPServers)
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// --mcp-config reads Claude Code's .mcp.json: stdio and remote servers
// reach session/new as ACP McpServer objects (env and headers as lists),
// and a server of the same name replaces the config file's.
func TestMCPConfigFlag(t *testing.T) {
	extra, configFile, _ := isolated(t)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	script := fakeagent.Script{RecordFile: record, AgentCapabilities: json.RawMessage(`{"mcpCapabilities":{"http":true,"sse":true}}`)}
	writeJSON(t, configFile, map[string]any{"defaults": map[string]any{"mcpServers": []any{
		map[string]any{"name": "git", "command": "/usr/bin/old-git", "args": []string{}, "env": []any{}},
		map[string]any{"name": "kept", "command": "kept-mcp", "args": []string{}, "env": []any{}},
	}}})
	file := writeFile(t, t.TempDir(), ".mcp.json", `{
		"mcpServers": {
			"git": {"command": "git-mcp", "args": ["--repo", "."], "env": {"TOKEN": "t", "A": "1"}},
			"docs": {"type": "http", "url": "https://mcp.example/docs", "headers": {"Authorization": "Bearer x"}},
			"events": {"type": "sse", "url": "https://mcp.example/sse"},
			"plain": {"url": "https://mcp.example/plain"}
		},
		"otherClaudeSettings": true
	}`)
	r := runIn(t, t.TempDir(), extra, &script, "", "--mcp-config", file, "-p", "one")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	want := `[{"name":"git","command":"git-mcp","args":["--repo","."],"env":[{"name":"A","value":"1"},{"name":"TOKEN","value":"t"}]},` +
		`{"name":"kept","command":"kept-mcp","args":[],"env":[]},` +
		`{"type":"http","name":"docs","url":"https://mcp.example/docs","headers":[{"name":"Authorization","value":"Bearer x"}]},` +
		`{"type":"sse","name":"events","url":"https://mcp.example/sse","headers":[]},` +
		`{"type":"http","name":"plain","url":"https://mcp.example/plain","headers":[]}]`
	if got := sentMCP(t, record); got != want {
		t.Errorf("mcpServers sent:\n%s\nwant:\n%s", got, want)
	}
}

// A named agent in the config file may carry its servers in the same
// {"name": {...}} form.
func TestMCPConfigNamedAgentObjectForm(t *testing.T) {
	extra, configFile, _ := isolated(t)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	script := *twoTurns(record)
	script.AgentCapabilities = json.RawMessage(`{"mcpCapabilities":{"http":true}}`)
	agent := fakeAgentDef(t, script, "")
	agent["mcpServers"] = map[string]any{"docs": map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp"}}
	writeJSON(t, configFile, map[string]any{"agents": map[string]any{"mine": agent}})
	r := runIn(t, t.TempDir(), extra, nil, "", "--agent", "mine", "--permission", "allow", "-p", "one")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if got, want := sentMCP(t, record), `[{"type":"http","name":"docs","url":"http://127.0.0.1:9/mcp","headers":[]}]`; got != want {
		t.Errorf("mcpServers sent: %s, want %s", got, want)
	}
}

// Bad input stops acphost (and acphost web) before the agent runs, with one
// clear message and exit status 2: a missing or malformed file, no
// mcpServers, an unknown type, an entry that is neither stdio nor remote,
// and a server whose transport the agent did not advertise.
func TestMCPConfigBadInput(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	script := fakeagent.Script{} // advertises no mcpCapabilities: stdio only
	for _, tc := range []struct{ name, body, want string }{
		{"missing", "", "--mcp-config: open "},
		{"malformed.json", `{"mcpServers": {`, "malformed.json: unexpected end of JSON input"},
		{"none.json", `{"servers": {}}`, `none.json: no "mcpServers" object`},
		{"type.json", `{"mcpServers": {"x": {"type": "ws", "url": "ws://h"}}}`, `server "x": unknown type "ws" (want stdio, http or sse)`},
		{"neither.json", `{"mcpServers": {"x": {"args": ["a"]}}}`, `server "x": a stdio server wants a "command"`},
		{"field.json", `{"mcpServers": {"x": {"command": "c", "cwd": "/"}}}`, `server "x": want an object with a "command"`},
		{"list.json", `{"mcpServers": 3}`, "want an array of ACP McpServer objects or an object of named servers"},
		{"http.json", `{"mcpServers": {"docs": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}`, `MCP server "docs" is http, which the agent does not take (it takes stdio)`},
	} {
		path := filepath.Join(dir, tc.name)
		if tc.body != "" {
			writeFile(t, dir, tc.name, tc.body)
		}
		r := runIn(t, t.TempDir(), extra, &script, "", "--mcp-config", path, "-p", "one")
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 2 {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 2 and %q", tc.name, r.code, r.stderr, tc.want)
		}
		r = runIn(t, t.TempDir(), extra, &script, "", "web", "--mcp-config", path)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("web %s: exit %d, stderr:\n%s\nwant exit 2 and %q", tc.name, r.code, r.stderr, tc.want)
		}
	}
}
