package main

import (
	"strings"
	"testing"

	"github.com/acphost/acphost/cmd/acphost/internal/agents"
)

// How an agent logs in beyond ACP is said once, in its profile: a run the
// agent refuses for want of a login says the profile's authHint (which
// acphost agents shows), however the agent was found; nothing for an
// agent acphost does not know, nor for a remote one (its host's login).
func TestLoginHintIsTheProfilesAuthHint(t *testing.T) {
	claudeHint := agents.ProfileFor("claude", nil).AuthHint
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
		{config{agentName: "codex"}, agents.ProfileFor("codex", nil).AuthHint},
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
