package agents

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
		if p := ProfileFor(tc.name, tc.command); p != nil {
			got = p.name
		}
		if got != tc.want {
			t.Errorf("%s %v: profile %q, want %q", tc.name, tc.command, got, tc.want)
		}
	}
	d := Def{Command: []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp@0.101.0"}}.withProfile("mine")
	if d.Mode != claude.ModeDefault || d.profile.lib == nil || d.profile.lib.Name != "claude" || d.LibProfile() != nil {
		t.Errorf("claude by package: mode %q, lib %+v, given %+v", d.Mode, d.profile.lib, d.LibProfile())
	}
	// The legacy adapter is the library's claude-legacy, which the library
	// finds by the command itself: the CLI hands it no profile.
	d = Def{Command: []string{"npx", "-y", "@zed-industries/claude-agent-acp@0.23.1"}}.withProfile("old")
	if d.profile == nil || d.profile.lib == nil || d.profile.lib.Name != "claude-legacy" || d.LibProfile() != nil {
		t.Errorf("legacy claude: %+v", d.profile)
	}
	d = Def{Command: []string{"npx", "-y", "@agentclientprotocol/claude-agent-acp"}, Mode: "plan"}.withProfile("mine")
	if d.Mode != "plan" {
		t.Errorf("the entry's mode lost to the profile's: %q", d.Mode)
	}
	d = Def{Command: []string{"/x/bin/devin", "acp"}}.withProfile("devin")
	if d.LibProfile() != &devinProfile { // the library knows no Devin: the CLI gives it
		t.Errorf("devin: lib %+v", d.LibProfile())
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
