package acphost_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/confine"
	"github.com/stretchr/testify/require"
)

// forgetfulClaude is Claude as it persists sessions: only once a prompt
// was sent in them, so a restarted process cannot load a session that
// never had one (this one never knows any: ForgetSessions, no history
// file). rec records what each of its processes received.
func forgetfulClaude(rec string) fakeagent.Script {
	s := acphost.ClaudeLike()
	s.AgentCapabilities = acphost.Raw(`{"loadSession":true}`)
	s.ForgetSessions = true
	s.RecordFile = rec
	s.Turns = []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("answered"))}}}
	return s
}

// recordDir is a directory the agent may write under plan mode's kernel
// layer (PlanWritable), not under the temporary directory, which may
// hold the project.
func recordDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(".", ".plan-record-")
	require.NoError(t, err)
	dir, _ = filepath.Abs(dir)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// recorded returns what the agent's processes received of method, in
// order: the params.
func recorded(t *testing.T, rec, method string) []json.RawMessage {
	t.Helper()
	msgs, err := fakeagent.ReadRecord(rec)
	require.NoError(t, err)
	var out []json.RawMessage
	for _, m := range msgs {
		if m.Method == method {
			out = append(out, m.Params)
		}
	}
	return out
}

// Plan mode turned on before the first prompt restarts the agent under
// the kernel layer; the agent cannot load a session that never had a
// prompt, and there was nothing to lose: the prompt runs on a fresh
// session, in the agent's plan mode, under the kernel layer.
func TestPlanModeSwitchBeforeTheFirstPromptLosesNothing(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	for _, tc := range []struct {
		name        string
		start, then bool
		mode        string
	}{
		{"on", false, true, "plan"},
		{"off", true, false, "auto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := recordDir(t)
			rec := filepath.Join(dir, "record.ndjson")
			c, err := acphost.StartFake(t, forgetfulClaude(rec), acphost.ACPOptions{PlanMode: tc.start,
				Process: acphost.ProcessOptions{Confine: &acphost.Confinement{PlanOnly: true, PlanWritable: []string{dir}}},
			})
			require.NoError(t, err)
			first := c.Session().ID()
			c.SetPlanMode(tc.then)
			resp, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "hello"})
			require.NoError(t, err, "the first prompt must not fail")
			require.Equal(t, "answered", resp.Text)
			require.NotNil(t, resp.Restarted)
			require.False(t, resp.Restarted.ContextLost, "a session without a prompt has nothing to lose")
			require.NotErrorIs(t, resp.Restarted, acphost.ErrContextLost)
			require.Equal(t, first, resp.Restarted.OldSessionID)
			require.Equal(t, c.Session().ID(), resp.Restarted.NewSessionID)
			require.Len(t, recorded(t, rec, "session/prompt"), 1, "the prompt was sent once")
			e := c.Session().Enforcement()
			require.Equal(t, tc.then, e.Kernel, "%+v", e)
			require.Equal(t, tc.mode, e.Mode)
			require.Equal(t, tc.then, e.AgentMode)
		})
	}
}

// An agent that re-attaches no session at all is restarted under the
// kernel layer too while no session had a prompt: nothing can be lost.
func TestPlanModeRestartsAnAgentWithoutLoadBeforeTheFirstPrompt(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("ok"))}}}}
	c, err := acphost.StartFake(t, script, acphost.ACPOptions{Process: acphost.ProcessOptions{Confine: &acphost.Confinement{PlanOnly: true}}})
	require.NoError(t, err)
	c.SetPlanMode(true)
	require.Contains(t, c.Session().Enforcement().KernelReason, "restarted under it before the next turn")
	resp, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "go"})
	require.NoError(t, err)
	require.NotNil(t, resp.Restarted)
	require.False(t, resp.Restarted.ContextLost)
	require.True(t, c.Session().Enforcement().Kernel)
}

// Between turns, a session the restarted agent refuses to re-attach has a
// conversation that is lost: that turn fails with a *RestartError
// matching ErrContextLost, its prompt not sent (the caller decides whether
// to go on without the context), and the next one runs on the fresh
// session under the new confinement.
func TestPlanModeSwitchBetweenTurnsReportsALostConversation(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	dir := recordDir(t)
	rec := filepath.Join(dir, "record.ndjson")
	c, err := acphost.StartFake(t, forgetfulClaude(rec), acphost.ACPOptions{Process: acphost.ProcessOptions{Confine: &acphost.Confinement{PlanOnly: true, PlanWritable: []string{dir}}}})
	require.NoError(t, err)
	_, err = c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "one"})
	require.NoError(t, err)
	c.SetPlanMode(true)
	resp, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "two"})
	require.ErrorIs(t, err, acphost.ErrContextLost)
	require.Empty(t, resp.StopReason)
	require.Len(t, recorded(t, rec, "session/prompt"), 1, "the prompt was not sent")
	resp, err = c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "two"})
	require.NoError(t, err)
	require.Equal(t, "answered", resp.Text)
	require.True(t, c.Session().Enforcement().Kernel)
	require.True(t, c.Session().Enforcement().AgentMode)
}
