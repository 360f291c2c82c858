//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/remote"
)

func TestProvenWarning(t *testing.T) {
	claude := config{agentName: "claude", agent: agents.Builtin["claude"].Command}
	for _, tc := range []struct {
		name    string
		cfg     config
		version string
		warn    bool
	}{
		{"older", claude, "0.49.0", true},
		{"the proven one", claude, "0.101.0", false},
		{"newer", claude, "0.102.1-beta", false},
		{"no version", claude, "", false},
		{"pinned in the config file", config{agentName: "claude", agent: []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp@0.49.0"}}, "0.49.0", false},
		{"not built in", config{agentName: "mine", agent: []string{"mine"}}, "0.0.1", false},
	} {
		got := provenWarning(tc.cfg, acp.Implementation{Version: tc.version})
		if (got != "") != tc.warn {
			t.Errorf("%s: warning %q", tc.name, got)
		}
	}
}

// TestOldBuiltInAgentIsWarnedOf: --agent claude, whose npx resolves an
// old build (here an npx on PATH that starts the fake agent, version
// 0.0.0), says so beside the header naming the agent and its version.
func TestOldBuiltInAgentIsWarnedOf(t *testing.T) {
	extra, _, _ := isolated(t)
	path, args, env, err := fakeagent.Command(fakeagent.Script{Name: "claude-agent-acp"})
	if err != nil {
		t.Fatal(err)
	}
	_ = path // the test binary: run acphost's built-in agent instead
	var sh strings.Builder
	sh.WriteString("#!/bin/sh\nexec env")
	for _, kv := range env {
		sh.WriteString(" " + remote.Quote(kv))
	}
	sh.WriteString(" " + remote.Quote(binPath))
	for _, a := range args {
		sh.WriteString(" " + remote.Quote(a))
	}
	sh.WriteString("\n")
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "npx"), []byte(sh.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runIn(t, t.TempDir(), append(extra, "PATH="+bin+":"+os.Getenv("PATH")), nil, "", "--agent", "claude", "--permission", "allow", "-p", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "acphost · claude-agent-acp 0.0.0 · session") {
		t.Errorf("the header does not name the agent and its version:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "claude reports version 0.0.0, older than 0.101.0, the one acphost was proven with") {
		t.Errorf("no warning of the old build:\n%s", r.stderr)
	}
}
