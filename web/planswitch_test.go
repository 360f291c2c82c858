package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/web"
	"github.com/stretchr/testify/require"
)

// claudeModes are Claude's modes: default asks, plan changes nothing.
var claudeModes = json.RawMessage(`{"modes":{"currentModeId":"default","availableModes":[
	{"id":"default","name":"Default"},{"id":"plan","name":"Plan Mode"},{"id":"bypassPermissions","name":"Bypass Permissions"}]}}`)

// The page's switch turned on before the first prompt restarts the agent
// under plan mode's kernel layer; the agent cannot load a session that
// never had a prompt, and the prompt runs on a fresh one instead of the
// turn failing "session lost". The page then shows the agent's real mode.
func TestPlanSwitchBeforeTheFirstPrompt(t *testing.T) {
	t.Parallel()
	if !acphost.CanConfine() {
		t.Skip("plan mode's kernel layer (Linux Landlock) is not available here")
	}
	script := fakeagent.Script{Name: "@agentclientprotocol/claude-agent-acp", NewSessionResult: claudeModes,
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`), ForgetSessions: true, ReadOnlyModes: []string{"plan"},
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answered"))}}}}
	path, args, env, err := fakeagent.Command(script)
	require.NoError(t, err)
	srv, err := web.New(context.Background(), web.Config{Agent: acphost.ACPOptions{Command: path, Args: args,
		Dir: t.TempDir(), Process: acphost.ProcessOptions{Env: env, Confine: &acphost.Confinement{PlanOnly: true}}}})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	r := &rig{t: t, srv: srv}
	r.hs = newHTTPServer(t, srv)
	tb := r.tab()
	r.post("/api/planmode", map[string]bool{"on": true}, http.StatusOK)
	r.post("/api/prompt", map[string]string{"text": "hello"}, http.StatusOK)
	text, end := tb.textUntil("done")
	require.Equal(t, "answered", text, "%v", tb.seen)
	require.Empty(t, end.str("error"))
	st := tb.next("state in plan", func(m msg) bool { return m.typ() == "state" && m["running"] == false && m.str("mode") == "plan" })
	require.Contains(t, st.str("holds"), "kernel")
}

// The page's mode picker while plan mode holds the agent in its plan mode:
// the agent stays there, the page says the mode it is in and that the
// picked one is set once plan mode is off.
func TestModePickedUnderPlanMode(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Name: "@agentclientprotocol/claude-agent-acp", NewSessionResult: claudeModes}
	r := newRig(t, script, func(c *web.Config) { c.Agent.PlanMode = true })
	tb := r.tab()
	tb.next("state in plan", func(m msg) bool { return m.typ() == "state" && m.str("mode") == "plan" })
	r.post("/api/mode", map[string]string{"id": "bypassPermissions"}, http.StatusOK)
	tb.next("the note", func(m msg) bool { return m.typ() == "note" && m.str("kind") == "mode" })
	st := tb.next("state", ofType("state"))
	require.Equal(t, "plan", st.str("mode"))
	require.Equal(t, "plan", r.srv.Client().Session().Enforcement().Mode)
}
