package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// TestAgentErrorShowsStderrAndTheRootHint: a turn the agent fails with
// its own JSON-RPC error (claude-agent-acp's "Internal error" when claude
// exits, as it does as root) shows the agent's stderr tail, and as root
// the known cause: IS_SANDBOX=1.
func TestAgentErrorShowsStderrAndTheRootHint(t *testing.T) {
	t.Setenv("IS_SANDBOX", "")
	os.Unsetenv("IS_SANDBOX") // restored by Setenv's cleanup
	extra, configFile, _ := isolated(t)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{
		Steps: []fakeagent.Step{{Stderr: "Claude Code: starting"}, {Stderr: "--dangerously-skip-permissions cannot be used with root/sudo privileges"}},
		Error: json.RawMessage(`{"code":-32603,"message":"Internal error","data":{"details":"Claude Code process exited with code 1"}}`),
	}}}
	writeJSON(t, configFile, map[string]any{"agents": map[string]any{"claude": fakeAgentDef(t, script, "")}})
	r := runIn(t, t.TempDir(), extra, nil, "", "--agent", "claude", "-p", "hi")
	if r.code != exitFailed {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"the turn failed: ", "Claude Code process exited with code 1", "agent stderr (last lines):",
		"  Claude Code: starting\n", "  --dangerously-skip-permissions cannot be used with root/sudo privileges\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if root := os.Geteuid() == 0; strings.Contains(r.stderr, "IS_SANDBOX=1") != root {
		t.Errorf("root %v, but the IS_SANDBOX hint shown is %v:\n%s", root, !root, r.stderr)
	}
}

func TestRootHint(t *testing.T) {
	claude := config{agentName: "claude"}
	for _, tc := range []struct {
		name    string
		euid    int
		cfg     config
		environ []string
		hint    bool
	}{
		{"root, claude", 0, claude, []string{"HOME=/root"}, true},
		{"root, a claude command", 0, config{agent: []string{"/usr/bin/claude-agent-acp"}}, nil, true},
		{"a user", 1000, claude, nil, false},
		{"root, IS_SANDBOX set", 0, claude, []string{"IS_SANDBOX=1"}, false},
		{"root, IS_SANDBOX in the agent's env", 0, config{agentName: "claude", agentEnv: []string{"IS_SANDBOX=1"}}, nil, false},
		{"root, another agent", 0, config{agentName: "codex"}, nil, false},
	} {
		if got := rootHint(tc.euid, tc.cfg, tc.environ); (got != "") != tc.hint {
			t.Errorf("%s: hint %q", tc.name, got)
		}
	}
}
