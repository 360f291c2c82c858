package main

import (
	"strings"
	"testing"

	"github.com/acphost/acphost/claude"
)

// An agent's profile applies however it was found: built-in name,
// registry id, a config entry running its package (pinned or not) or
// its binary; an entry's own mode wins over the profile's.
func TestProfileAppliesHoweverTheAgentWasFound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command []string
		want    string
	}{
		{"claude", nil, "claude"},
		{"claude-acp", []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp@0.69.0"}, "claude"},
		{"mine", []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp@0.101.0"}, "claude"},
		{"mine", []string{"/usr/bin/npx", "-y", "--package", "@zed-industries/codex-acp@0.16.0", "codex-acp"}, "codex"},
		{"mine", []string{"uvx", "--from", "@google/gemini-cli==1", "x"}, "gemini"},
		{"devin", []string{"/home/u/.cache/acphost/agents/devin/3000.4.25/bin/devin", "acp"}, "devin"},
		{"work-devin", []string{"/opt/devin/bin/devin", "acp"}, "devin"},
		{"mine", []string{"my-agent", "--acp"}, ""},
	} {
		got := ""
		if p := profileFor(tc.name, tc.command); p != nil {
			got = p.name
		}
		if got != tc.want {
			t.Errorf("%s %v: profile %q, want %q", tc.name, tc.command, got, tc.want)
		}
	}
	d := agentDef{Command: []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp@0.101.0"}}.withProfile("mine")
	if d.Mode != claude.ModeDefault || d.profile.lib == nil || d.profile.lib.Name != "claude" || d.libProfile() != nil {
		t.Errorf("claude by package: mode %q, lib %+v, given %+v", d.Mode, d.profile.lib, d.libProfile())
	}
	// The legacy adapter is the library's claude-legacy, which the library
	// finds by the command itself: the CLI hands it no profile.
	d = agentDef{Command: []string{"npx", "-y", "@zed-industries/claude-agent-acp@0.23.1"}}.withProfile("old")
	if d.profile == nil || d.profile.lib == nil || d.profile.lib.Name != "claude-legacy" || d.libProfile() != nil {
		t.Errorf("legacy claude: %+v", d.profile)
	}
	d = agentDef{Command: []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp"}, Mode: "plan"}.withProfile("mine")
	if d.Mode != "plan" {
		t.Errorf("the entry's mode lost to the profile's: %q", d.Mode)
	}
	d = agentDef{Command: []string{"/x/bin/devin", "acp"}}.withProfile("devin")
	if d.libProfile() != &devinProfile { // the library knows no Devin: the CLI gives it
		t.Errorf("devin: lib %+v", d.libProfile())
	}
}

// The progress line shows bytes and total, rewritten in place, and is
// cleared at the end; it is drawn at most every 100ms but for the last.
func TestProgressLine(t *testing.T) {
	var b strings.Builder
	p := &progressLine{w: &b, what: "devin 3000.4.25"}
	p.update(1<<20, 4<<20)
	p.update(2<<20, 4<<20) // within 100ms: not drawn
	p.update(4<<20, 4<<20)
	p.end()
	want := "\r\x1b[Kdevin 3000.4.25: 1.0 MiB of 4.0 MiB (25%)\r\x1b[Kdevin 3000.4.25: 4.0 MiB of 4.0 MiB (100%)\r\x1b[K"
	if b.String() != want {
		t.Errorf("%q\nwant %q", b.String(), want)
	}
	var nothing *progressLine
	nothing.end() // no terminal: no line, and ending it is fine
}

// How an agent logs in beyond ACP is said once, in its profile: a run the
// agent refuses for want of a login says the profile's authHint (which
// acphost agents shows), however the agent was found; nothing for an
// agent acphost does not know, nor for a remote one (its host's login).
func TestLoginHintIsTheProfilesAuthHint(t *testing.T) {
	claudeHint := profileFor("claude", nil).authHint
	if claudeHint == "" {
		t.Fatal("claude's profile has no authHint")
	}
	for _, tc := range []struct {
		cfg  config
		want string
	}{
		{config{agentName: "claude"}, claudeHint},
		{config{agentName: "mine", agent: []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp@0.101.0"}}, claudeHint},
		{config{agent: []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp"}}, claudeHint},
		{config{agentName: "codex"}, profileFor("codex", nil).authHint},
		{config{agentName: "mine", agent: []string{"my-agent"}}, ""},
		{config{}, ""},
		{config{agentName: "claude", remote: remoteFlags{ssh: "me@host"}}, ""},
	} {
		got := tc.cfg.loginHint()
		if tc.want == "" && got != "" || tc.want != "" && !strings.HasSuffix(got, tc.want) {
			t.Errorf("%q %v remote %v: loginHint %q, want the profile's %q", tc.cfg.agentName, tc.cfg.agent, tc.cfg.remote.remote(), got, tc.want)
		}
	}
}
