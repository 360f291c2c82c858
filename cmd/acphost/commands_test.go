package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// TestAgentCommandHiddenByAcphostsIsReachable: Claude advertises /config,
// which acphost answers itself; /help lists the agent's as //config, and
// acphost's /config says once how to reach the agent's. //config sends
// "/config" to the agent.
func TestAgentCommandHiddenByAcphostsIsReachable(t *testing.T) {
	script := &fakeagent.Script{
		BeforeSessionNew: []fakeagent.Step{fakeagent.Say(json.RawMessage(`{"sessionUpdate":"available_commands_update","availableCommands":[
			{"name":"config","description":"Open Claude Code's settings"},{"name":"review","description":"Review a pull request"}]}`))},
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("the agent's config"))}}},
	}
	r := runWith(t, script, "/help\n/config\n/config\n//config\n")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"//config", "Open Claude Code's settings", "/review", "the agent has a /config of its own: //config sends it", "the agent's config"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "of its own: //config"); n != 1 {
		t.Errorf("the hint shows %d times, want once:\n%s", n, r.stdout)
	}
}
