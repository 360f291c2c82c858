package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// promptAgent advertises the system prompt (override too) and records
// what it receives in dir/record.ndjson; its turn reports usage.
func promptAgent(dir string) *fakeagent.Script {
	return &fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"sessionCapabilities":{"systemPrompt":{"mode":{"override":{}}}}}`),
		RecordFile:        filepath.Join(dir, "record.ndjson"),
		Turns: []fakeagent.Turn{{
			Steps: []fakeagent.Step{
				fakeagent.Say(fakeagent.Text("answered")),
				fakeagent.Say(json.RawMessage(`{"sessionUpdate":"usage_update","used":900,"size":200000,"cost":{"amount":0.0042,"currency":"USD"}}`)),
			},
			Usage: json.RawMessage(`{"totalTokens":240,"inputTokens":200,"outputTokens":40,"thoughtTokens":5}`),
		}},
	}
}

// sentSystemPrompts are the systemPrompt members of the session/new
// requests the agent received.
func sentSystemPrompts(t *testing.T, dir string) []string {
	t.Helper()
	msgs, err := fakeagent.ReadRecord(filepath.Join(dir, "record.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		if m.Method == "session/new" {
			var p struct {
				SystemPrompt json.RawMessage `json:"systemPrompt"`
			}
			_ = json.Unmarshal(m.Params, &p)
			out = append(out, string(p.SystemPrompt))
		}
	}
	return out
}

// --system-prompt, --system-prompt-file and the config file's reach
// session/new in the schema's shape; the closing line and --json's
// result line carry the turn's tokens and cost.
func TestSystemPromptFlagsReachTheAgent(t *testing.T) {
	dir := t.TempDir()
	extra, configFile, _ := isolated(t)
	r := runIn(t, dir, extra, promptAgent(dir), "", "--system-prompt", "Answer briefly.", "--permission", "allow", "-p", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "✓ end_turn · ") || !strings.Contains(r.stdout, " · 200 in + 40 out tokens (5 thought) · 900/200.0k context · 0.0042 USD") {
		t.Errorf("the closing line lacks the tokens and cost:\n%s", r.stdout)
	}

	file := filepath.Join(dir, "prompt.txt")
	if err := os.WriteFile(file, []byte("You review code.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runIn(t, dir, extra, promptAgent(dir), "", "--system-prompt-file", file, "--system-prompt-mode", "override", "--json", "-p", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var result struct {
		Type  string          `json:"type"`
		Usage json.RawMessage `json:"usage"`
		Cost  json.RawMessage `json:"cost"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &result); err != nil || result.Type != "result" {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	if string(result.Usage) != `{"totalTokens":240,"inputTokens":200,"outputTokens":40,"thoughtTokens":5}` || string(result.Cost) != `{"amount":0.0042,"currency":"USD"}` {
		t.Errorf("--json's result line: usage %s, cost %s", result.Usage, result.Cost)
	}

	if err := os.MkdirAll(filepath.Dir(configFile), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"defaults": {"systemPrompt": "From the defaults."},
	         "agents": {"mine": {"command": ["x"], "systemPrompt": "From the agent.", "systemPromptMode": "override"}}}`
	if err := os.WriteFile(configFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runIn(t, dir, extra, promptAgent(dir), "", "--permission", "allow", "-p", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	want := []string{
		`{"mode":"append","content":[{"type":"text","text":"Answer briefly."}]}`,
		`{"mode":"override","content":[{"type":"text","text":"You review code.\n"}]}`,
		`{"mode":"append","content":[{"type":"text","text":"From the defaults."}]}`,
	}
	if got := sentSystemPrompts(t, dir); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Flags that cannot make a system prompt are usage errors, before any
// agent starts.
func TestSystemPromptFlagErrors(t *testing.T) {
	extra, configFile, _ := isolated(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--system-prompt", "x", "--system-prompt-file", "f"}, "give one"},
		{[]string{"--system-prompt", "x", "--system-prompt-mode", "prepend"}, `--system-prompt-mode "prepend": want append or override`},
		{[]string{"--system-prompt-mode", "override"}, "--system-prompt-mode override: give the system prompt with --system-prompt or --system-prompt-file"},
		{[]string{"--system-prompt-file", filepath.Join(dir, "missing")}, "--system-prompt-file: open"},
	} {
		r := runIn(t, dir, extra, nil, "", append(tc.args, "-p", "hi")...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if err := os.MkdirAll(filepath.Dir(configFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configFile, []byte(`{"defaults": {"systemPrompt": "x", "systemPromptMode": "replace"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runIn(t, dir, extra, nil, "", "-p", "hi"); r.code != exitUsage || !strings.Contains(r.stderr, `defaults.systemPromptMode "replace": want append or override`) {
		t.Errorf("a bad mode in the config file: exit %d, stderr %q", r.code, r.stderr)
	}
}

// An agent that takes append only is refused override mode, with what to
// do, before anything is sent.
func TestSystemPromptOverrideRefused(t *testing.T) {
	dir := t.TempDir()
	extra, _, _ := isolated(t)
	script := promptAgent(dir)
	script.AgentCapabilities = json.RawMessage(`{"sessionCapabilities":{"systemPrompt":{}}}`)
	r := runIn(t, dir, extra, script, "", "--system-prompt", "x", "--system-prompt-mode", "override", "-p", "hi")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--system-prompt: this agent takes a system prompt in append mode only: --system-prompt-mode append") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if got := sentSystemPrompts(t, dir); len(got) != 0 {
		t.Errorf("session/new was sent: %q", got)
	}
}
