package acphost_test

import (
	"path/filepath"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/require"
)

// A mode asked for while plan mode holds the session (SetMode, as the
// CLI's --mode and /mode, the page's picker) does not take the agent out
// of its plan mode: it is kept for when plan mode goes off, and the report
// says the mode the agent is in.
func TestPlanModeHoldsAgainstSetMode(t *testing.T) {
	c, a := acphost.ConnectFake(t, acphost.ClaudeLike(), acphost.ACPOptions{PlanMode: true})
	ctx := acphost.TurnCtx(t)
	require.NoError(t, c.Session().SetMode(ctx, "default"))
	require.Equal(t, []string{"plan"}, acphost.ModesSet(a.Agent), "the agent never left its plan mode")
	e := c.Session().Enforcement()
	require.Equal(t, "plan", e.Mode)
	require.True(t, e.AgentMode)
	require.Equal(t, "default", e.RestoreMode)
	require.Error(t, c.Session().SetMode(ctx, "no-such-mode"), "a mode the agent does not offer is refused, not kept")

	_, err := c.GenerateCtx(ctx, acphost.Request{Prompt: "one"})
	require.NoError(t, err)
	require.Equal(t, []string{"plan"}, acphost.ModesSet(a.Agent))

	c.SetPlanMode(false)
	_, err = c.GenerateCtx(ctx, acphost.Request{Prompt: "two"})
	require.NoError(t, err)
	require.Equal(t, []string{"plan", "default"}, acphost.ModesSet(a.Agent), "plan mode off puts the asked-for mode in")
	e = c.Session().Enforcement()
	require.Equal(t, "default", e.Mode)
	require.Empty(t, e.RestoreMode)
}

// The session's own mode (SessionOptions.Mode, ACPOptions.Mode) in plan
// mode: the session opens in the agent's plan mode, and the asked-for
// mode is set only when plan mode goes off.
func TestPlanModeHoldsAgainstTheSessionsMode(t *testing.T) {
	c, a := acphost.ConnectFake(t, acphost.ClaudeLike(), acphost.ACPOptions{PlanMode: true, Mode: "default"})
	require.Equal(t, []string{"plan"}, acphost.ModesSet(a.Agent))
	require.Equal(t, "plan", c.Session().Enforcement().Mode)
	require.Equal(t, "default", c.Session().Enforcement().RestoreMode)
	c.SetPlanMode(false)
	_, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "go"})
	require.NoError(t, err)
	require.Equal(t, []string{"plan", "default"}, acphost.ModesSet(a.Agent))
}

// Outside plan mode a mode set is what the report says at once, before
// the agent's confirming update (if it ever sends one).
func TestSetModeIsReportedAtOnce(t *testing.T) {
	script := acphost.ClaudeLike()
	script.NeverConfirmMode = true
	c, _ := acphost.ConnectFake(t, script, acphost.ACPOptions{})
	require.NoError(t, c.Session().SetMode(acphost.TurnCtx(t), "default"))
	require.Equal(t, "default", c.Session().Enforcement().Mode)
	require.Equal(t, acphost.ModeAsks, c.Session().Enforcement().ModeKind)
}

// A session loaded in plan mode whose agent reports it in another mode
// (the mode it was stored in) is put in the agent's plan mode as it is
// re-attached, before any prompt; the mode asked for is kept for later.
func TestPlanModeHoldsAsASessionIsLoaded(t *testing.T) {
	script := acphost.ClaudeLike()
	script.AgentCapabilities = acphost.Raw(`{"loadSession":true}`)
	c, a := acphost.ConnectFake(t, script, acphost.ACPOptions{})
	ctx := acphost.TurnCtx(t)
	c.SetPlanMode(true)
	s, err := c.LoadSession(ctx, "stored", acphost.SessionOptions{Mode: "default"})
	require.NoError(t, err)
	require.Equal(t, []string{"plan"}, acphost.ModesSet(a.Agent))
	require.Equal(t, "plan", s.Enforcement().Mode)
	require.True(t, s.Enforcement().AgentMode)
}

// The history a loaded session replays is not what the agent does now:
// a change it reports there, made unasked in an earlier process, is not
// counted as one made in this session.
func TestReplayedChangesAreNotCountedUnasked(t *testing.T) {
	history := filepath.Join(t.TempDir(), "history.ndjson")
	script := acphost.ClaudeLike(fakeagent.Turn{Steps: []fakeagent.Step{
		fakeagent.Say(acphost.Raw(`{"sessionUpdate":"tool_call","toolCallId":"t1","title":"edit","kind":"edit","status":"completed"}`)),
	}})
	script.NewSessionResult = acphost.Raw(`{"modes":{"currentModeId":"default","availableModes":[{"id":"default","name":"Manual"},{"id":"plan","name":"Plan"}]}}`)
	script.AgentCapabilities = acphost.Raw(`{"loadSession":true}`)
	script.HistoryFile = history
	c, _ := acphost.ConnectFake(t, script, acphost.ACPOptions{})
	_, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "edit"})
	require.NoError(t, err)
	require.Equal(t, 1, c.Session().Enforcement().Unasked, "made in this session")
	id := c.Session().ID()
	require.NoError(t, c.Close())

	c2, _ := acphost.ConnectFake(t, script, acphost.ACPOptions{SessionID: id})
	e := c2.Session().Enforcement()
	require.Zero(t, e.Unasked, "replayed, not made")
	require.False(t, e.ActsUnasked, "%+v", e)
}

// Plan mode turned on between turns switches the agent's mode before the
// next prompt: the turn's stream says so first, whenever the agent's
// confirmation arrives.
func TestPlanModeSwitchIsATurnsFirstEvent(t *testing.T) {
	c, _ := acphost.ConnectFake(t, acphost.ClaudeLike(fakeagent.Turn{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("ok"))}}), acphost.ACPOptions{})
	c.SetPlanMode(true)
	var events []acphost.StreamEvent
	_, err := c.GenerateStream(acphost.TurnCtx(t), acphost.Request{Prompt: "go"}, func(ev acphost.StreamEvent) { events = append(events, ev) })
	require.NoError(t, err)
	require.NotEmpty(t, events)
	require.Equal(t, acphost.EventMode, events[0].Type, "%+v", events)
	require.Equal(t, "plan", events[0].Mode)
	modes := 0
	for _, ev := range events {
		if ev.Type == acphost.EventMode {
			modes++
		}
	}
	require.LessOrEqual(t, modes, 2)
}
