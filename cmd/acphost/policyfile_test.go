package main

// Tests of --non-interactive-permissions, --permission-policy, the config
// file's mcpServers and --quiet.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// twoTurns asks for "ls" (execute) in each turn and answers with the
// option it got; record names the agent's record file.
func twoTurns(record string) *fakeagent.Script {
	turn := fakeagent.Turn{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text("let me look ")),
		fakeagent.Say(fakeagent.ToolCall("t1", "ls", "execute")),
		fakeagent.Ask(fakeagent.PermissionParams("t1", "ls", "execute")),
		fakeagent.Say(fakeagent.Text("picked {{answer}}")),
	}}
	return &fakeagent.Script{RecordFile: record, Turns: []fakeagent.Turn{turn, turn}}
}

func TestNonInteractivePermissions(t *testing.T) {
	// deny (the default): a reject-kind answer, every turn runs.
	for _, args := range [][]string{nil, {"--non-interactive-permissions", "deny"}} {
		r := runWith(t, twoTurns(""), "", append(args, "--json", "-p", "one", "-p", "two")...)
		res := ofType(events(t, r.stdout), "result")
		if r.code != 0 || len(res) != 2 || resultText(res[1]) != "let me look \n\npicked reject" {
			t.Errorf("%q: exit %d, %d results (the last %q); stderr:\n%s", args, r.code, len(res), resultText(res[len(res)-1]), r.stderr)
		}
	}

	// fail: the turn ends, later prompts do not run, exit 1, the request named.
	record := filepath.Join(t.TempDir(), "record.jsonl")
	r := runWith(t, twoTurns(record), "", "--non-interactive-permissions", "fail", "-p", "one", "-p", "two")
	if r.code != exitFailed {
		t.Errorf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	want := `acphost: permission request for "ls" (execute) with nobody to answer it (--non-interactive-permissions fail): the turn is cancelled; the 1 prompt(s) left do not run; the exit status will be 1`
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	if !strings.Contains(r.stdout, "permission: fail (nobody to ask") || strings.Contains(r.stdout, "picked") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	if n := countMethod(msgs, "session/prompt"); n != 1 {
		t.Errorf("%d prompts reached the agent, want 1", n)
	}
	if countMethod(msgs, "session/cancel") != 1 {
		t.Errorf("the turn was not cancelled: %d session/cancel", countMethod(msgs, "session/cancel"))
	}

	// With --json as well: the result line, then nothing.
	r = runWith(t, twoTurns(""), "", "--json", "--non-interactive-permissions", "fail", "-p", "one", "-p", "two")
	if res := ofType(events(t, r.stdout), "result"); r.code != exitFailed || len(res) != 1 {
		t.Errorf("--json: exit %d, results %+v", r.code, res)
	}

	// A policy chosen (--permission) is not "nobody to ask".
	r = runWith(t, twoTurns(""), "", "--permission", "allow", "--non-interactive-permissions", "fail", "-p", "one")
	if r.code != 0 || !strings.Contains(r.stdout, "picked allow") {
		t.Errorf("--permission allow: exit %d; stdout:\n%s", r.code, r.stdout)
	}

	r = runWith(t, nil, "", "--non-interactive-permissions", "maybe")
	if r.code != exitUsage || !strings.Contains(r.stderr, `--non-interactive-permissions "maybe": want deny or fail`) {
		t.Errorf("bad value: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}

// writePolicy writes a policy file and returns its path.
func writePolicy(t *testing.T, dir, text string) string {
	t.Helper()
	path := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPermissionPolicyFile(t *testing.T) {
	dir := t.TempDir()
	allowLs := writePolicy(t, dir, "{\"rules\": [\n  {\"kind\": \"read\", \"answer\": \"reject\"},\n  {\"kind\": \"execute\", \"command\": \"ls\", \"answer\": \"allow\"}\n]}")
	r := runWith(t, nil, "", "--permission-policy", allowLs, "--permission", "reject", "-p", "list files")
	if r.code != 0 || !strings.Contains(r.stdout, "picked allow") || !strings.Contains(r.stdout, "[allow_once] · policy policy.json:3") ||
		!strings.Contains(r.stdout, "permission: policy.json, else reject") {
		t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	// Unmatched: the --permission policy answers.
	other := writePolicy(t, t.TempDir(), `[{"kind": "read", "answer": "reject"}]`)
	r = runWith(t, nil, "", "--permission-policy", other, "--permission", "allow", "--json", "-p", "list files")
	if res := ofType(events(t, r.stdout), "result"); r.code != 0 || len(res) != 1 || resultText(res[0]) != "picked allow" {
		t.Errorf("fallback: exit %d, results %+v", r.code, res)
	}

	// ask with nobody to ask: the --non-interactive-permissions answer.
	askAll := writePolicy(t, t.TempDir(), `[{"answer": "ask"}]`)
	r = runWith(t, nil, "", "--permission-policy", askAll, "--permission", "allow", "--non-interactive-permissions", "fail", "-p", "list files")
	if r.code != exitFailed || !strings.Contains(r.stderr, "--non-interactive-permissions fail") {
		t.Errorf("ask, nobody: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	// ask with --permission ask: the person answers (here, stdin).
	r = runWith(t, nil, "y\n", "--permission-policy", askAll, "--permission", "ask", "-p", "list files")
	if r.code != 0 || !strings.Contains(r.stdout, "choose 1-3") || !strings.Contains(r.stdout, "picked allow") {
		t.Errorf("ask: exit %d; stdout:\n%s", r.code, r.stdout)
	}

	// A malformed file fails at start, line-accurate.
	bad := writePolicy(t, t.TempDir(), "[\n {\"kind\": \"read\",\n  \"answer\": \"always\"}\n]")
	r = runWith(t, nil, "", "--permission-policy", bad, "-p", "x")
	if r.code != exitUsage || !strings.Contains(r.stderr, bad+`:3: rule 1: answer "always": want allow, reject or ask`) {
		t.Errorf("bad file: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}

// The config file's defaults name a policy file (relative to the config
// file), nonInteractivePermissions and MCP servers; an agent adds its own.
func TestConfigPolicyAndMCPServers(t *testing.T) {
	extra, configFile, _ := isolated(t)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	script := *twoTurns(record)
	script.AgentCapabilities = json.RawMessage(`{"mcpCapabilities":{"http":true}}`)
	agent := fakeAgentDef(t, script, "")
	agent["mcpServers"] = []any{
		map[string]any{"name": "fs", "command": "/opt/fs-mcp", "args": []string{"--root", "/x"}, "env": []any{}},
		map[string]any{"name": "docs", "type": "http", "url": "https://mcp.example/docs", "headers": []any{}},
	}
	writeJSON(t, configFile, map[string]any{
		"defaults": map[string]any{
			"permissionPolicy":          "policy.json",
			"nonInteractivePermissions": "deny",
			"mcpServers":                []any{map[string]any{"name": "fs", "command": "/usr/bin/old-fs", "args": []string{}, "env": []any{}}, map[string]any{"name": "git", "command": "git-mcp", "args": []string{}, "env": []any{}}},
		},
		"agents": map[string]any{"mine": agent},
	})
	writePolicy(t, filepath.Dir(configFile), `[{"kind": "execute", "answer": "allow"}]`)
	r := runIn(t, t.TempDir(), extra, nil, "", "--agent", "mine", "-p", "one")
	if r.code != 0 || !strings.Contains(r.stdout, "picked allow") || !strings.Contains(r.stdout, "policy policy.json:1") {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	var params struct {
		MCPServers []map[string]any `json:"mcpServers"`
	}
	if i := indexOf(msgs, "session/new"); i < 0 {
		t.Fatal("no session/new")
	} else if err := json.Unmarshal(msgs[i].Params, &params); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range params.MCPServers {
		names = append(names, s["name"].(string)+"="+firstString(s["command"], s["url"]))
	}
	if got := strings.Join(names, " "); got != "fs=/opt/fs-mcp git=git-mcp docs=https://mcp.example/docs" {
		t.Errorf("mcpServers sent: %s", got)
	}

	// A --permission-policy flag wins over the file's.
	flagPolicy := writePolicy(t, t.TempDir(), `[{"kind": "execute", "answer": "reject"}]`)
	r = runIn(t, t.TempDir(), extra, nil, "", "--agent", "mine", "--permission-policy", flagPolicy, "-p", "one")
	if r.code != 0 || !strings.Contains(r.stdout, "picked reject") {
		t.Errorf("flag policy: exit %d; stdout:\n%s", r.code, r.stdout)
	}

	// A server without a name is refused at start.
	writeJSON(t, configFile, map[string]any{"defaults": map[string]any{"mcpServers": []any{map[string]any{"command": "x"}}}})
	r = runIn(t, t.TempDir(), extra, nil, "", "-p", "one")
	if r.code != exitUsage || !strings.Contains(r.stderr, "defaults.mcpServers[0]: want an object with a \"name\"") {
		t.Errorf("bad server: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}

func firstString(vs ...any) string {
	for _, v := range vs {
		if s, ok := v.(string); ok {
			return s
		}
	}
	return ""
}

func TestQuiet(t *testing.T) {
	r := runWith(t, twoTurns(""), "", "--quiet", "--permission", "allow", "-p", "one", "-p", "two")
	if r.code != 0 || r.stdout != "picked allow\npicked allow\n" {
		t.Errorf("exit %d; stdout %q; stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// The last message only, made safe.
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(json.RawMessage(`{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"draft"}}`)),
		fakeagent.Say(json.RawMessage(`{"sessionUpdate":"agent_message_chunk","messageId":"m2","content":{"type":"text","text":"final \u001b[31manswer"}}`)),
		fakeagent.Say(json.RawMessage(`{"sessionUpdate":"agent_message_chunk","messageId":"m2","content":{"type":"text","text":" here\n"}}`)),
	}}}}
	r = runWith(t, script, "", "--quiet", "-p", "x")
	if r.code != 0 || strings.Contains(r.stdout, "\x1b") || !strings.HasPrefix(r.stdout, "final ") || !strings.HasSuffix(r.stdout, "answer here\n") || strings.Contains(r.stdout, "draft") {
		t.Errorf("exit %d; stdout %q", r.code, r.stdout)
	}
	if r := runWith(t, nil, "", "--quiet", "--json", "-p", "x"); r.code != exitUsage {
		t.Errorf("--quiet --json: exit %d", r.code)
	}
}
