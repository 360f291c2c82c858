package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
)

// autoAgent is the current Claude adapter as a user starts it: in its own
// auto mode, which runs its tools without asking; default asks, plan
// changes nothing.
func autoAgent(file string) *fakeagent.Script {
	return &fakeagent.Script{
		Name: "@agentclientprotocol/claude-agent-acp",
		NewSessionResult: json.RawMessage(`{"modes":{"currentModeId":"auto","availableModes":[
			{"id":"default","name":"Manual"},{"id":"plan","name":"Plan"},{"id":"auto","name":"Auto"}]}}`),
		ReadOnlyModes: []string{"plan"},
		AskingModes:   []string{"default"},
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			{Run: []string{"sh", "-c", "echo hi > " + file}},
			fakeagent.Say(fakeagent.Text("done")),
		}}},
	}
}

// --permission plan and reject hold for an agent started in a mode that
// never asks: plan puts it in its plan mode (and the kernel layer holds),
// reject in its asking mode, whose request is then rejected. The header
// says what holds.
func TestPermissionHoldsWhateverModeTheAgentStartsIn(t *testing.T) {
	for _, tc := range []struct{ policy, header string }{
		{"plan", "permission: plan (held by host, agent mode plan"},
		{"reject", "mode: default"},
		{"ask", "mode: default"},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.txt")
			r := runIn(t, dir, nil, autoAgent(out), "", "--permission", tc.policy, "--non-interactive-permissions", "deny", "-p", "write out.txt")
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Fatalf("--permission %s: out.txt was written; stdout:\n%s", tc.policy, r.stdout)
			}
			if !strings.Contains(r.stdout, tc.header) {
				t.Errorf("header: want %q; stdout:\n%s", tc.header, r.stdout)
			}
			if tc.policy == "plan" && acphost.CanConfine() && !strings.Contains(r.stdout, ", kernel)") {
				t.Errorf("the kernel layer is not reported; stdout:\n%s", r.stdout)
			}
		})
	}
}

// An agent that offers no mode that asks and acts unasked: under
// --permission reject the first unasked change stops the turn, the exit
// status is 1, and the message says the agent offers no asking mode.
func TestUnaskedChangeStopsTheTurn(t *testing.T) {
	dir := t.TempDir()
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Run: []string{"true"}},
		{WaitCancel: true},
	}}}}
	r := runIn(t, dir, nil, script, "", "--permission", "reject", "-p", "go")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "without asking") || !strings.Contains(r.stderr, "offers no mode that asks") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
